"""Where a function a file imports from the project is defined, read with ``ast`` without importing
anything.

A rule that meets a call of such a function leaves a *lead* (``Finding.lead``): the per-file lint
is cached by the file's own text, so it cannot look at another module. The front ends answer leads
on every run (``cg_lint/engine.py: answer_leads``); this module finds the helper they ask about.

A dotted name ``pkg.ops.safe_norm`` (as the file's imports resolve it) is looked for as
``pkg/ops.py`` or ``pkg/ops/__init__.py`` in the file's folder and each folder above it up to the
project's root, and in the root's ``src/``. A module that only re-exports the name
(``from .ops import safe_norm`` in ``pkg/__init__.py``) is followed once. Anything else (a star
import, a name bound at run time, a module outside the project, an installed library) is not found,
and an unanswered lead is never shown.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from cg_lint.project.modules import INSTALLED, Project

MAX_PARTS = 8  # a dotted name deeper than this is not a project helper we follow


@dataclass(frozen=True)
class Helper:
    """A module-level function of the project: its file, the text read, and the parsed def."""

    path: str
    text: str
    func: ast.FunctionDef
    imports: tuple[ast.stmt, ...]  # the module's top-level imports (what its names mean)


def find_helper(project: Project, importer: str, dotted: str) -> Helper | None:
    """The module-level ``def`` that ``dotted`` names, seen from the file ``importer``; None when it
    is not a plain function of a module of ``project``."""
    parts = dotted.split(".")
    if len(parts) < 2 or len(parts) > MAX_PARTS or not all(p.isidentifier() for p in parts):
        return None
    module, name = parts[:-1], parts[-1]
    for path in _module_files(project, importer, module):
        found = _defined(project, path, name, follow=True)
        if found is not None:
            return found
    return None


def _module_files(project: Project, importer: str, module: list[str]) -> list[str]:
    """Files that can hold ``module``: from the importer's folder up to the project's root, and the
    root's ``src/`` (the first that exists per folder)."""
    root = os.path.abspath(project.root)
    folder = os.path.dirname(os.path.abspath(importer))
    folders: list[str] = []
    while True:
        folders.append(folder)
        if folder == root or not folder.startswith(root + os.sep):
            break
        folder = os.path.dirname(folder)
    folders.append(os.path.join(root, "src"))
    out = []
    for base in folders:
        stem = os.path.join(base, *module)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if _inside(candidate, root) and (candidate in project.overlays or os.path.isfile(candidate)):
                out.append(candidate)
                break
    return out


def _inside(path: str, root: str) -> bool:
    """In the project, and not an installed library (a virtualenv inside the repository)."""
    parts = path.split(os.sep)
    return path.startswith(root + os.sep) and not any(m in parts[len(root.split(os.sep)):] for m in INSTALLED)


def _defined(project: Project, path: str, name: str, follow: bool) -> Helper | None:
    tree = _parse(project, path)
    if tree is None:
        return None
    text = project.text(path) or ""
    imports: list[ast.stmt] = []
    found: ast.FunctionDef | None = None
    reexport: ast.ImportFrom | None = None
    bindings = 0
    for stmt in _top_level(tree):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(stmt)
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                return None  # the star may bind the name too: unknown
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    bindings += 1
                    reexport = stmt if isinstance(stmt, ast.ImportFrom) and alias.name == name else None
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name == name:
            bindings += 1
            found = stmt if isinstance(stmt, ast.FunctionDef) else None
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                bindings += 2  # rebound at run time: unknown
    if bindings != 1:
        return None
    if found is not None:
        return Helper(path, text, found, tuple(imports))
    if reexport is not None and follow:
        return _reexported(project, path, reexport, name)
    return None


def _reexported(project: Project, path: str, stmt: ast.ImportFrom, name: str) -> Helper | None:
    """``from .ops import safe_norm`` in ``path``: the def in ``ops`` (one level, not further)."""
    folder = os.path.dirname(path)
    if stmt.level:
        for _ in range(stmt.level - 1):
            folder = os.path.dirname(folder)
        stem = os.path.join(folder, *(stmt.module or "").split(".")) if stmt.module else folder
        candidates = [stem + ".py", os.path.join(stem, "__init__.py")]
    else:
        if not stmt.module:
            return None
        return next((h for p in _module_files(project, path, stmt.module.split("."))
                     if (h := _defined(project, p, name, follow=False)) is not None), None)
    root = os.path.abspath(project.root)
    for candidate in candidates:
        if candidate != path and _inside(candidate, root) and (
                candidate in project.overlays or os.path.isfile(candidate)):
            return _defined(project, candidate, name, follow=False)
    return None


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, with those of a top-level ``try`` (an optional import)."""
    out: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Try):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def _parse(project: Project, path: str) -> ast.Module | None:
    text = project.fresh_text(path)
    if text is None:
        return None
    key = ("leads-ast", path)
    cached = project.memo.get(key)
    if cached is not None and cached[0] is text:
        return cached[1]  # type: ignore[return-value]
    try:
        tree: ast.Module | None = ast.parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    project.memo[key] = (text, tree)
    return tree
