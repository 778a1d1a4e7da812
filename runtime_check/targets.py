"""Turn command-line targets (files, folders, dotted module names) into importable units."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from cg_lint.config import Settings, iter_files
from cg_lint.findings import FileError
from cg_lint.sources import special_kind
from cg_lint.prefilter import might_contain
from cg_lint.syntax.names import BUILDER_MARKERS

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class TargetError(Exception):
    """A target that is neither a file, a folder nor a module name (one line, exit 2)."""


@dataclass(frozen=True)
class Unit:
    display: str
    module: str
    path: str | None  # absolute; None for a module name resolved in the child
    sys_path: str
    package: bool  # import by name (inside a package) rather than from the file

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _relative_depth(path: Path) -> int:
    """How many packages up the module's relative imports reach (``from .. import x``: 2)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return 0
    return max((n.level for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)), default=0)


def _package_root(path: Path) -> tuple[str, Path, bool]:
    """Dotted name and the sys.path entry that imports ``path`` as its package would.

    Folders with ``__init__.py`` are packages; a folder without one above them is a namespace
    package when the module's relative imports reach it (``dnnlib/ops/x.py`` importing
    ``from .. import custom_ops`` from a ``dnnlib`` without ``__init__.py``), as Python imports it
    from the folder above."""
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.insert(0, directory.name)
        directory = directory.parent
    packages = len(parts) - 1 if path.name != "__init__.py" else len(parts)
    for _ in range(_relative_depth(path) - packages):
        if not directory.name.isidentifier() or directory.parent == directory:
            break
        parts.insert(0, directory.name)
        directory = directory.parent
    if path.name == "__init__.py":
        parts.pop()
    return ".".join(parts), directory, len(parts) > 1 or path.name == "__init__.py"


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def file_unit(path: Path) -> Unit:
    path = path.resolve()
    module, root, package = _package_root(path)
    return Unit(_display(path), module, str(path), str(root), package)


def mentions_custom_gradient(path: Path, settings: Settings) -> bool:
    """cg-lint's first gate: the file names custom_gradient, a configured decorator or a TF builder."""
    try:
        return might_contain(path.read_bytes(), settings.markers() + BUILDER_MARKERS)
    except OSError:
        return False


def special_file(path: Path) -> str | None:
    """What ``path`` is when it exists but is not a regular file or folder (reading a FIFO blocks)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISDIR(mode) else special_kind(mode)  # cg-lint's words for the same files


def expand(targets: list[str], cwd: Path | None = None, settings: Settings | None = None,  # noqa: C901 (a table of cases)
           on_skip: Callable[[str], None] | None = None) -> list[Unit]:
    """Units for ``targets``; folders are walked as cg-lint walks them (the project's excludes).
    Special files (FIFOs, sockets, devices) are skipped with one line each (reading a FIFO blocks)."""
    cwd = cwd or Path.cwd()
    settings = settings or Settings(root=str(cwd))
    units: list[Unit] = []
    seen: set[str] = set()

    def skip(path: Path | str, what: str) -> None:
        if on_skip is not None:
            on_skip(f"{path}: skipped: {what}, not a regular file")

    for target in targets:
        candidate = Path(target)
        what = special_file(candidate)
        if what is not None:
            skip(target, what)
            continue
        if candidate.is_file():
            if candidate.suffix != ".py":
                raise TargetError(f"{target}: error: not a Python file")
            found = [file_unit(candidate)]
        elif candidate.is_dir():
            found = []
            for path in _walk(candidate, settings):
                what = special_file(path)
                if what is not None:
                    skip(_display(path), what)
                elif mentions_custom_gradient(path, settings):
                    found.append(file_unit(path))
        elif _DOTTED.match(target) and not target.endswith(".py"):
            top = target.split(".")[0]
            if str(cwd) not in sys.path:
                sys.path.insert(0, str(cwd))
            if importlib.util.find_spec(top) is None:  # only the top package: does not run user code
                raise TargetError(f"{target}: error: no such file, folder or module")
            found = [Unit(target, target, None, str(cwd), True)]
        else:
            raise TargetError(f"{target}: error: no such file, folder or module")
        for unit in found:
            key = unit.path or unit.module
            if key not in seen:
                seen.add(key)
                units.append(unit)
    return units


def _walk(folder: Path, settings: Settings) -> list[Path]:
    files = []
    for item in iter_files([str(folder)], settings):
        if isinstance(item, FileError):
            raise TargetError(item.one_line())
        if item.endswith(".py"):
            files.append(Path(item))
    return files
