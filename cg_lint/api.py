"""Public API: lint a source, or list the custom-gradient definitions in it (used by runtime-check)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from cg_lint import prefilter
from cg_lint.config import Settings
from cg_lint.engine import build_context, lint_source as _lint_source
from cg_lint.findings import FileError, Finding
from cg_lint.form_feeds import strip_form_feeds


@dataclass(frozen=True)
class Definition:
    name: str  # the name callers use
    qualname: str  # "f", "Cls.method", "outer.<locals>.inner"
    line: int
    column: int
    kind: str  # function | method | staticmethod | classmethod | nested | lambda
    inputs: tuple[str, ...]
    has_varargs: bool


def lint_source(source: str | bytes, path: str, settings: Settings | None = None) -> tuple[list[Finding], FileError | None]:
    result = _lint_source(source, path, settings)
    return result.findings, result.error


def find_custom_gradients(source: str, path: str, settings: Settings | None = None) -> list[Definition]:
    """Every custom-gradient definition in ``source``; [] when the source cannot be parsed."""
    settings = settings or Settings()
    # the same guard as linting: text CPython rejects, or nested deeper than libcst survives
    # (it can crash the process), never reaches libcst
    plan = prefilter.plan(source, settings.markers(), reduce=False)
    if plan.skip or plan.error is not None:
        return []
    try:
        parse_text, shifts = strip_form_feeds(source)  # see cg_lint.form_feeds
        module = cst.parse_module(parse_text)
        ctx = build_context(module, source, path, settings, column_shifts=shifts)
    except (cst.ParserSyntaxError, RecursionError):
        return []
    return [
        Definition(r.name, r.qualname, r.line, r.column, r.kind, tuple(r.inputs), r.has_varargs)
        for r in ctx.records
    ]
