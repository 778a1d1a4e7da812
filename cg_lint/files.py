"""Which files to lint: walk the given paths, skip VCS folders, virtualenvs and excludes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from cg_lint.config import Settings
from cg_lint.findings import FileError


def iter_files(paths: list[str], settings: Settings, force_exclude: bool = False) -> Iterator[str | FileError]:
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            yield FileError(raw, "no such file or directory")
            continue
        if path.is_file():
            if force_exclude and settings.is_excluded(raw):
                continue
            yield raw
            continue
        if force_exclude and raw not in (".", "./") and settings.is_excluded(raw):
            continue
        for folder, dirs, files in os.walk(raw):
            dirs[:] = sorted(
                d for d in dirs
                if not settings.is_excluded(os.path.join(folder, d))
                and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            )
            for name in sorted(files):
                if name.endswith((".py", ".pyi")):
                    full = os.path.join(folder, name)
                    if not settings.is_excluded(full):
                        yield full
