"""``[tool.cg_lint]`` for each open document, re-read when a pyproject.toml changes.

Settings are looked up the way the CLI does (the nearest pyproject.toml holding the table, from
the document's folder upward) and kept per folder with the modification time of every
pyproject.toml from that folder up to the root (a handful of ``stat`` calls). Each lint compares
them, so an edited, created or deleted pyproject.toml is seen even by clients that do not send
``workspace/didChangeWatchedFiles``; for those that do, the server also forgets every entry.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from cg_lint.config import ConfigError, Settings, find_config, load_settings


@dataclass(frozen=True)
class Loaded:
    settings: Settings | None
    error: str | None  # one line: why the configuration cannot be used
    signature: tuple[int | None, ...]  # the mtimes of the pyproject.toml files above the folder


def _signature(folder: str) -> tuple[int | None, ...]:
    out: list[int | None] = []
    current = os.path.abspath(folder)
    while True:
        try:
            out.append(os.stat(os.path.join(current, "pyproject.toml")).st_mtime_ns)
        except OSError:
            out.append(None)
        parent = os.path.dirname(current)
        if parent == current:
            return tuple(out)
        current = parent


class WorkspaceConfig:
    def __init__(self) -> None:
        self._by_folder: dict[str, Loaded] = {}
        self._lock = threading.Lock()

    def forget(self) -> None:
        with self._lock:
            self._by_folder.clear()

    def for_folder(self, folder: str) -> Loaded:
        signature = _signature(folder)
        with self._lock:
            kept = self._by_folder.get(folder)
        if kept is not None and kept.signature == signature:
            return kept
        loaded = self._load(folder, signature)
        with self._lock:
            self._by_folder[folder] = loaded
        return loaded

    @staticmethod
    def _load(folder: str, signature: tuple[int | None, ...]) -> Loaded:
        config: Path | None = None
        try:
            config = find_config(Path(folder))
            settings = load_settings(config=config) if config is not None else Settings(root=folder)
        except ConfigError as e:
            return Loaded(None, str(e), signature)
        except RecursionError:  # tomllib recurses once per nesting level of a value
            where = str(config) if config is not None else f"a pyproject.toml above {folder}"
            return Loaded(None, f"{where}: invalid TOML: nested too deeply", signature)
        return Loaded(settings, None, signature)
