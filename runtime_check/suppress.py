"""Silence runtime findings the way linter findings are silenced.

``# noqa`` / ``# noqa: CG104`` on the reported line (the ``def`` line), ``[tool.cg_lint]``
``select``/``ignore``/``per-file-ignores`` from the nearest pyproject.toml, and a per-function
``ignore = ["CG104"]`` under ``[tool.cg_lint.runtime.functions."module:qualname"]``.

Runtime-only codes (``CG1xx``) stay selected when ``select`` names only static prefixes
(the default ``["CG0"]`` is about the linter); ``ignore`` applies to them as to any code.
"""

from __future__ import annotations

import functools
import linecache
from dataclasses import replace
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from cg_lint.config import ConfigError, Settings, load_settings
from cg_lint.noqa import is_suppressed


@functools.lru_cache(maxsize=64)
def settings_for(folder: str) -> Settings | None:
    try:
        return load_settings(start=Path(folder))
    except ConfigError:
        return None  # the parent reports configuration errors; here, filter nothing


def runtime_settings(settings: Settings) -> Settings:
    select = settings.select + settings.extend_select
    if not any(code == "ALL" or code.startswith("CG1") or code in ("CG", "C") for code in select):
        select = select + ("CG1",)
    return replace(settings, select=select, extend_select=())


def silenced(finding: dict[str, Any], settings: Settings | None, ignored: Iterable[str] = ()) -> bool:
    code, path = finding["code"], finding.get("path")
    if any(code.startswith(prefix) for prefix in ignored):
        return True
    if path and finding.get("line"):
        text = linecache.getline(str(path), int(finding["line"]))
        if text and is_suppressed(text, code):
            return True
    return bool(settings is not None and path and not runtime_settings(settings).is_enabled(code, str(path)))


def keep(findings: list[dict[str, Any]], path: str, ignored: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The findings no noqa comment, configured ignore or per-function ignore silences."""
    settings = settings_for(str(Path(path).resolve().parent))
    ignored = tuple(ignored)
    return [f for f in findings if not silenced(f, settings, ignored)]
