"""Which qualified names mean TensorFlow's ``custom_gradient``, and module names for files.

Names are resolved syntactically (libcst's QualifiedNameProvider), never by importing: ``import
tensorflow_probability as tf`` makes ``tf.custom_gradient`` TFP's helper, which is a different API.
"""

from __future__ import annotations

from pathlib import Path

# Every public spelling of TF's decorator; keras.ops.custom_gradient is tf.custom_gradient(f=...) on
# the TensorFlow backend, with the same contract.
CUSTOM_GRADIENT_NAMES: frozenset[str] = frozenset(
    {
        "tensorflow.custom_gradient",
        "tensorflow.compat.v1.custom_gradient",
        "tensorflow.compat.v2.custom_gradient",
        "tensorflow.python.ops.custom_gradient.custom_gradient",
        "tensorflow.python.ops.custom_gradient",  # `from ...ops import custom_gradient` used as a call? no: module
        "keras.ops.custom_gradient",
        "keras.src.ops.core.custom_gradient",
        "keras.src.ops.custom_gradient",
        "keras.src.backend.tensorflow.core.custom_gradient",
        "tf_keras.ops.custom_gradient",
    }
)
# `tensorflow.python.ops.custom_gradient` is a module, not the decorator.
CUSTOM_GRADIENT_NAMES = CUSTOM_GRADIENT_NAMES - {"tensorflow.python.ops.custom_gradient"}

# TF's helpers that build a custom gradient around the function they are given when called: no
# rule reads them, but runtime-check exercises their callers (the contract is TF's own).
CUSTOM_GRADIENT_BUILDERS: frozenset[str] = frozenset(
    f"{module}.{helper}"
    for module in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2",
                   "tensorflow.python.ops.custom_gradient")
    for helper in ("recompute_grad", "grad_pass_through")
)
BUILDER_MARKERS = ("grad_pass_through", "recompute_grad")

# The substring every file holding a TF custom gradient must contain (prefilter).
MARKER = "custom_gradient"


def module_name_for(path: str | None) -> str | None:
    """Dotted module name of a file, walking up through packages (folders with __init__.py)."""
    if not path or path == "-":
        return None
    p = Path(path)
    if p.suffix not in (".py", ".pyi"):
        return None
    parts = [] if p.stem == "__init__" else [p.stem]
    parent = p.parent
    try:
        while (parent / "__init__.py").is_file():
            parts.insert(0, parent.name)
            if parent.parent == parent:
                break
            parent = parent.parent
    except OSError:
        pass
    return ".".join(parts) or None


def absolute_name(name: str, module: str | None, is_package: bool = False) -> str:
    """Resolve a relative qualified name (``..ops.custom_gradient``) against ``module``."""
    if not name.startswith("."):
        return name
    if module is None:
        return name.lstrip(".")
    dots = len(name) - len(name.lstrip("."))
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if dots > 1:
        base = base[: len(base) - (dots - 1)] if dots - 1 <= len(base) else []
    rest = name[dots:]
    return ".".join(base + ([rest] if rest else []))


def is_custom_gradient_name(name: str, extra: frozenset[str] = frozenset()) -> bool:
    return name in CUSTOM_GRADIENT_NAMES or name in extra or _reexported(name)


def _reexported(name: str) -> bool:
    """``from mypkg import tf`` then ``@tf.custom_gradient``: a project that re-exports TensorFlow
    under its usual names (never TFP's substrates, which are a different API)."""
    return (name.endswith((".tf.custom_gradient", ".tensorflow.custom_gradient"))
            and not name.startswith(("tensorflow_probability", "tfp.")))
