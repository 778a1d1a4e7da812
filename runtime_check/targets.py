"""Turn command-line targets (files, folders, dotted module names) into importable units."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from cg_lint.config import Settings, iter_files
from cg_lint.findings import FileError
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


def _package_root(path: Path) -> tuple[str, Path, bool]:
    """Dotted name and the sys.path entry that imports ``path`` as its package would."""
    parts = [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
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


def expand(targets: list[str], cwd: Path | None = None, settings: Settings | None = None) -> list[Unit]:
    """Units for ``targets``; folders are walked as cg-lint walks them (the project's excludes)."""
    cwd = cwd or Path.cwd()
    settings = settings or Settings(root=str(cwd))
    units: list[Unit] = []
    seen: set[str] = set()
    for target in targets:
        candidate = Path(target)
        if candidate.is_file():
            if candidate.suffix != ".py":
                raise TargetError(f"{target}: error: not a Python file")
            found = [file_unit(candidate)]
        elif candidate.is_dir():
            found = [file_unit(p) for p in _walk(candidate, settings) if mentions_custom_gradient(p, settings)]
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
