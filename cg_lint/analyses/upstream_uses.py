"""What a grad function does with its upstream, read from its source: clips it, normalises it, or neither.

A true vector-Jacobian product is linear in its upstream. Two designs break that on purpose:
clipping the upstream (``tf.clip_by_norm(dy, c)``, linear again once the upstream is small) and
normalising it (``dy / tf.norm(dy)``, never linear). runtime-check's linearity check (CG110) asks
this before it reports, so those designs stay silent while a forgotten or mangled upstream does not.

A light, flow-insensitive taint over one grad function: names bound to expressions that mention an
upstream parameter (or a name already tainted) carry the upstream too. Callees are recognised by
their qualified names (``tensorflow.clip_by_norm``, ``keras.ops.clip``, ``numpy.clip``), so a
project's own ``clip`` is not taken for TensorFlow's.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from cg_lint.model.records import FuncNode
from cg_lint.syntax.index import FileIndex

CLIP = "clip"
NORMALISE = "normalise"

# libraries whose ops these are (a project's own helper of the same name is not)
_LIBRARIES = ("tensorflow.", "keras.", "tf_keras.", "numpy.", "tensorflow_probability.")
# calls that clip their first argument: linear for arguments small enough
_CLIP_CALLS = frozenset({"clip_by_norm", "clip_by_value", "clip_by_global_norm", "clip_by_average_norm",
                         "clip", "clip_norm"})
# calls that return their argument scaled to unit norm
_NORMALISE_CALLS = frozenset({"l2_normalize", "normalize", "unit_norm"})
# calls whose result is a norm (of what they are given): dividing by one normalises
_NORM_CALLS = frozenset({"norm", "global_norm", "reduce_euclidean_norm", "sqrt", "rsqrt", "reduce_max",
                         "reduce_std", "reduce_mean", "reduce_sum", "abs", "maximum"})
_DIVISIONS = frozenset({"divide", "truediv", "divide_no_nan", "div_no_nan", "realdiv"})
_MULTIPLY = frozenset({"multiply", "mul"})
_BUILTINS = frozenset({"abs", "max"})  # Python's own, on a tensor


def upstream_uses(index: FileIndex, func: FuncNode) -> frozenset[str]:
    """The on-purpose non-linear uses of the upstream in grad function ``func`` (``CLIP``,
    ``NORMALISE``); empty when there are none."""
    key = ("upstream-uses", id(func))
    if key not in index.memo:
        index.memo[key] = (func, _upstream_uses(index, func))
    return index.memo[key][1]  # type: ignore[index]


def _upstream_uses(index: FileIndex, func: FuncNode) -> frozenset[str]:
    params = func.params
    tainted = {p.name.value for p in (*params.posonly_params, *params.params)
               if p.name.value not in ("self", "variables")}
    if type(params.star_arg) is cst.Param:
        tainted.add(params.star_arg.name.value)
    nodes = index.walk.walk(func.body)
    _spread(index, nodes, tainted)
    norms: set[str] = set()  # names bound to a norm of the upstream (``n = tf.norm(dy)``)
    for node in nodes:
        if type(node) is cst.Assign and _is_norm_of_upstream(index, node.value, tainted, norms):
            norms.update(t.target.value for t in node.targets if type(t.target) is cst.Name)
    found: set[str] = set()
    for node in nodes:
        found |= _use(index, node, tainted, norms)
    return frozenset(found)


def _names(index: FileIndex, node: cst.CSTNode) -> Iterable[str]:
    return (n.value for n in index.walk.walk(node) if type(n) is cst.Name)


def _mentions(index: FileIndex, node: cst.CSTNode, tainted: set[str]) -> bool:
    return any(name in tainted for name in _names(index, node))


def _bindings(node: cst.CSTNode) -> tuple[list[cst.CSTNode], cst.CSTNode | None]:
    if type(node) is cst.Assign:
        return [t.target for t in node.targets], node.value
    if type(node) in (cst.AugAssign, cst.AnnAssign, cst.NamedExpr):
        return [node.target], node.value  # type: ignore[attr-defined]
    if type(node) in (cst.For, cst.CompFor):
        return [node.target], node.iter  # type: ignore[attr-defined]
    return [], None


def _spread(index: FileIndex, nodes: list[cst.CSTNode], tainted: set[str]) -> None:
    """Add every name bound from a tainted expression, until nothing changes."""
    bindings = [(targets, value) for targets, value in map(_bindings, nodes) if value is not None]
    changed = True
    while changed:
        changed = False
        for targets, value in bindings:
            if not any(type(n) is cst.Name and n.value in tainted for n in index.walk.walk(value)):
                continue
            for target in targets:
                for name in index.walk.walk(target):
                    if type(name) is cst.Name and name.value not in tainted:
                        tainted.add(name.value)
                        changed = True


def _called(index: FileIndex, call: cst.Call) -> str:
    """The op a call names, by its last part, when it is a library's op (or a Python builtin)."""
    for name in index.qualnames(call.func):
        if name.startswith(_LIBRARIES):
            return name.rsplit(".", 1)[-1]
        if name in _BUILTINS:
            return name
    return ""


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def _is_norm_of_upstream(index: FileIndex, node: cst.CSTNode, tainted: set[str], norms: set[str]) -> bool:
    """``tf.norm(dy)``, ``tf.sqrt(tf.reduce_sum(dy ** 2))``, ``norm + eps``: a norm of the upstream."""
    if type(node) is cst.Name:
        return node.value in norms
    if type(node) is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Multiply):
        return _is_norm_of_upstream(index, node.left, tainted, norms) \
            or _is_norm_of_upstream(index, node.right, tainted, norms)
    if type(node) is cst.Call and _called(index, node) in _NORM_CALLS:
        return _mentions(index, node, tainted)
    return False


def _is_inverse_norm(index: FileIndex, node: cst.CSTNode, tainted: set[str], norms: set[str]) -> bool:
    """``tf.math.rsqrt(tf.reduce_sum(dy * dy))`` or ``1 / tf.norm(dy)``."""
    if type(node) is cst.Call and _called(index, node) == "rsqrt":
        return _mentions(index, node, tainted)
    return (type(node) is cst.BinaryOperation and type(node.operator) is cst.Divide
            and type(node.left) in (cst.Integer, cst.Float)
            and _is_norm_of_upstream(index, node.right, tainted, norms))


def _use(index: FileIndex, node: cst.CSTNode, tainted: set[str], norms: set[str]) -> set[str]:
    if type(node) is cst.Call:
        name = _called(index, node)
        if not name:
            return set()
        positional = _positional(node)
        first = positional[0] if positional else next((a.value for a in node.args), None)
        if name in _CLIP_CALLS and positional and _mentions(index, positional[0], tainted):
            return {CLIP}
        if name in _NORMALISE_CALLS and first is not None and _mentions(index, first, tainted):
            return {NORMALISE}
        if name in _DIVISIONS and len(positional) >= 2 and _mentions(index, positional[0], tainted) \
                and _is_norm_of_upstream(index, positional[1], tainted, norms):
            return {NORMALISE}
        if name in _MULTIPLY and len(positional) >= 2 and any(
                _is_inverse_norm(index, a, tainted, norms) for a in positional[:2]):
            return {NORMALISE}
        return set()
    if type(node) is cst.BinaryOperation:
        if type(node.operator) is cst.Divide and _mentions(index, node.left, tainted) \
                and _is_norm_of_upstream(index, node.right, tainted, norms):
            return {NORMALISE}
        if type(node.operator) is cst.Multiply and (_is_inverse_norm(index, node.left, tainted, norms)
                                                    or _is_inverse_norm(index, node.right, tainted, norms)):
            return {NORMALISE}
    return set()
