"""Custom gradients that leave TensorFlow on purpose: the forward hands every tensor input to NumPy
(``x.numpy()``, ``np.asarray(x)``, ``np.array(x)``...) and computes there (a simulator, a C++ or numba
kernel, a renderer). Such a definition cannot run under ``tf.function`` by design: that is one
fact about the definition, not one per NumPy call, and it matters only where something traces it.
"""

from __future__ import annotations

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import body_nodes, python_value_uses, tensor_inputs
from cg_lint.model.records import CustomGradient
from cg_lint.syntax.index import FileIndex

# NumPy calls that turn their argument into an array (the first argument)
_TO_NUMPY = frozenset({"numpy.array", "numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray",
                       "numpy.float32", "numpy.float64", "numpy.complex64", "numpy.complex128"})


def leaves_tensorflow(index: FileIndex, record: CustomGradient) -> list[str] | None:
    """How the forward hands its inputs to NumPy, when it calls ``.numpy()`` on one of them or
    converts every tensor input with NumPy (``np.asarray(x)``); None otherwise."""
    key = ("leaves-tensorflow", id(record))
    if key not in index.memo:
        index.memo[key] = _leaves_tensorflow(index, record)
    return index.memo[key]  # type: ignore[return-value]


def _leaves_tensorflow(index: FileIndex, record: CustomGradient) -> list[str] | None:
    inputs = set(tensor_inputs(record)) - set(python_value_uses(index, record))
    if not inputs or type(record.node) is not cst.FunctionDef:
        return None
    converted: dict[str, str] = {}
    for node in body_nodes(record.node, index):
        if type(node) is not cst.Call or in_raise(index, node):
            continue
        func = node.func
        if (type(func) is cst.Attribute and func.attr.value == "numpy" and not node.args
                and type(func.value) is cst.Name and func.value.value in inputs):
            converted.setdefault(func.value.value, f"{func.value.value}.numpy()")
        elif node.args and type(node.args[0].value) is cst.Name and node.args[0].value.value in inputs:
            name = call_name(node, index.qualnames) or ""
            if name in _TO_NUMPY:
                arg = node.args[0].value.value
                converted.setdefault(arg, f"{name.replace('numpy.', 'np.')}({arg})")
    # .numpy() on an input exists only eagerly: a deliberate design even when other inputs
    # (a size, a dtype) stay Python values; NumPy's converters alone must take every input
    if not any(how.endswith(".numpy()") for how in converted.values()) and set(converted) != inputs:
        return None
    return [converted[n] for n in record.inputs if n in converted]


def in_raise(index: FileIndex, node: cst.CSTNode) -> bool:
    """Part of a ``raise`` statement: its message runs only on the error path (under a static
    test that is false when traced, it never runs there)."""
    parent = index.parent(node)
    while parent is not None and type(parent) not in (cst.FunctionDef, cst.Lambda, cst.SimpleStatementLine):
        if type(parent) is cst.Raise:
            return True
        parent = index.parent(parent)
    return False
