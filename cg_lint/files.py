"""Which files to lint: walk the given paths, skip VCS folders, virtualenvs and excludes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from cg_lint.config import Settings
from cg_lint.findings import FileError


def iter_files(paths: list[str], settings: Settings, force_exclude: bool = False) -> Iterator[str | FileError]:
    """Python files under ``paths``. The paths named here are linted even where an exclude would
    match them (ruff's rule); ``force_exclude`` applies the excludes to them too (pre-commit)."""
    excluder = settings.excluder()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield FileError(raw, "no such file or directory")
            continue
        if force_exclude and raw not in (".", "./") and excluder.excluded(raw):
            continue
        if path.is_file():
            yield raw
            continue
        for folder, dirs, files in os.walk(raw):
            dirs[:] = sorted(
                d for d in dirs
                if not excluder.entry_excluded(os.path.join(folder, d), d)
                and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            )
            for name in sorted(files):
                if name.endswith((".py", ".pyi")):
                    full = os.path.join(folder, name)
                    if not excluder.entry_excluded(full, name):
                        yield full
