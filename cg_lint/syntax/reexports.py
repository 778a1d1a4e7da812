"""``from lingvo import compat as tf`` then ``@tf.custom_gradient``: is the module TensorFlow?

A package that wraps TensorFlow often hands it out under the name ``tf`` from a module of its own
(lingvo's ``compat`` does ``from tensorflow.compat.v2 import *``). The alias alone is not enough:
other libraries spell a different API ``custom_gradient`` (TFP's substrates, mesh-tensorflow, JAX,
a project's numpy backend), and such a module may be imported as ``tf`` too. So the module is read,
never imported: found by path in the linted project or on the run's import path, it must bind
``custom_gradient`` from TensorFlow at its top level, and nothing after may rebind it.
"""

from __future__ import annotations

import ast
import sys
import sysconfig
from pathlib import Path

# modules whose star import or import of the name gives TensorFlow's decorator
_TF_MODULES = frozenset({"tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"})
# libraries that are known not to be TensorFlow, whatever alias they are imported under
_NOT_TF = ("tensorflow_probability", "tfp", "jax", "mesh_tensorflow", "keras", "tf_keras", "trax", "numpy")
MAX_BYTES = 2_000_000

_verdicts: dict[tuple[str, int, int], bool] = {}


def module_reexports_tensorflow(module: str, project_root: Path | None) -> bool:
    """``module`` (a dotted name) is a file of the project or of the import path that binds
    TensorFlow's ``custom_gradient``: the first file found decides, as an import would."""
    if not module or module == "tensorflow" or module.startswith("tensorflow.") or module.split(".")[0] in _NOT_TF:
        return False
    for root in _roots(project_root):
        file = _module_file(root, module)
        if file is not None:
            return _binds_tf_custom_gradient(file)
    return False


def _roots(project_root: Path | None) -> list[Path]:
    roots = [project_root] if project_root is not None else []
    paths = sysconfig.get_paths()
    for entry in (paths.get("purelib"), paths.get("platlib"), *sys.path):
        if entry and Path(entry).is_dir() and Path(entry) not in roots:
            roots.append(Path(entry))
    return roots


def _module_file(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
        try:
            if candidate.is_file():
                return candidate
        except OSError:
            return None
    return None


def _binds_tf_custom_gradient(file: Path) -> bool:
    try:
        stat = file.stat()
        key = (str(file), stat.st_mtime_ns, stat.st_size)
        if key in _verdicts:
            return _verdicts[key]
        if stat.st_size > MAX_BYTES:
            return False
        tree = ast.parse(file.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    bound = False
    for stmt in tree.body:  # top level only: what `import` leaves in the module
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module in _TF_MODULES and any(
                a.name in ("*", "custom_gradient") and (a.asname or a.name) in ("*", "custom_gradient")
                for a in stmt.names):
            bound = True
        elif "custom_gradient" in _names_bound(stmt):
            bound = False  # rebound after: no longer TensorFlow's for sure
    _verdicts[key] = bound
    return bound


def _names_bound(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement other than a TensorFlow import binds (loosely: any target)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {"*" if a.name == "*" else (a.asname or a.name).split(".")[0] for a in stmt.names} | (
            {"custom_gradient"} if any(a.name == "*" for a in stmt.names) else set())
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
