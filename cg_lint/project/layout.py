"""Where a project starts and which modules it has: the file-system half of ``modules``, with no
parsing, so the flake8 plugin can check what a cached decision read without importing the search."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
LIBRARY_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg")
INSTALLED = ("site-packages", "dist-packages")
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "env", "__pycache__", "node_modules", "build",
                       "dist", ".tox", ".nox", ".eggs", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
MAX_FILES = 20_000  # a bigger folder is not one project a search could follow


def project_root(path: str) -> str:
    """The folder a file's project starts at (the file's own folder when nothing marks one)."""
    here = Path(os.path.abspath(path)).parent
    parts = here.parts
    for marker in INSTALLED:
        if marker in parts:
            at = parts.index(marker)
            return str(Path(*parts[:at + 2])) if len(parts) > at + 1 else str(here)
    for folder in (here, *here.parents):
        if any(os.path.lexists(folder / m) for m in ROOT_MARKERS):
            return str(folder)
    return str(here)


def walk_modules(root: str) -> Iterator[str | None]:
    """The project's modules in a stable order; None last when there are more than MAX_FILES
    (the project is then truncated)."""
    count = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(names):
            if name.endswith(".py"):
                count += 1
                if count > MAX_FILES:
                    yield None
                    return
                yield os.path.join(folder, name)
