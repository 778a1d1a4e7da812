"""What a grad function does with its upstream, read from its source: clipped, normalised, or neither.

A true vector-Jacobian product is linear in its upstream. Two designs break that on purpose:
clipping the upstream (``tf.clip_by_norm(dy, c)``, linear again once the upstream is small) and
normalising it (``dy / tf.norm(dy)``, never linear). The linearity check consults this model
before it reports, so those designs stay silent while a forgotten or mangled upstream does not.

A light, flow-insensitive taint over one function's ``ast``: names bound to expressions that
mention an upstream parameter (or a name already tainted) carry the upstream too.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

CLIP = "clip"
NORMALISE = "normalise"

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


def upstream_flow(grad_fn: Callable[..., Any]) -> frozenset[str]:
    """The on-purpose non-linear uses of the upstream in ``grad_fn`` (``CLIP``, ``NORMALISE``);
    empty when there are none or the source cannot be read."""
    node = _function_node(grad_fn)
    if node is None:
        return frozenset()
    args = node.args
    tainted = {a.arg for a in [*args.posonlyargs, *args.args] if a.arg not in ("self", "variables")}
    if args.vararg is not None:
        tainted.add(args.vararg.arg)
    body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    _spread(body, tainted)
    norms: set[str] = set()  # names bound to a norm of the upstream (``n = tf.norm(dy)``)
    for tree in body:
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Assign) and _is_norm_of_upstream(sub.value, tainted, norms):
                norms.update(t.id for t in sub.targets if isinstance(t, ast.Name))
    found: set[str] = set()
    for tree in body:
        for sub in ast.walk(tree):
            found |= _use(sub, tainted, norms)
    return frozenset(found)


def _function_node(grad_fn: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    raw = inspect.unwrap(getattr(grad_fn, "__func__", grad_fn))
    try:
        source = textwrap.dedent(inspect.getsource(raw))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a lambda's line, cut out of a larger expression
        try:
            tree = ast.parse(source.strip().rstrip(",)"))
        except SyntaxError:
            return None
    name = getattr(raw, "__name__", "")
    for sub in ast.walk(tree):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == name:
            return sub
    if name == "<lambda>":
        return next((s for s in ast.walk(tree) if isinstance(s, ast.Lambda)), None)
    return None


def _mentions(node: ast.AST, tainted: set[str]) -> bool:
    return any(isinstance(s, ast.Name) and s.id in tainted for s in ast.walk(node))


def _spread(body: list[ast.AST], tainted: set[str]) -> None:
    """Add every name bound from a tainted expression, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for tree in body:
            for sub in ast.walk(tree):
                targets: list[ast.AST] = []
                value: ast.AST | None = None
                if isinstance(sub, ast.Assign):
                    targets, value = list(sub.targets), sub.value
                elif isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                    targets, value = [sub.target], sub.value
                elif isinstance(sub, (ast.For, ast.comprehension)):
                    targets, value = [sub.target], sub.iter
                if value is None or not _mentions(value, tainted):
                    continue
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name) and name.id not in tainted:
                            tainted.add(name.id)
                            changed = True


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_norm_of_upstream(node: ast.AST, tainted: set[str], norms: set[str]) -> bool:
    """``tf.norm(dy)``, ``tf.sqrt(tf.reduce_sum(dy ** 2))``, ``norm + eps``: a norm of the upstream."""
    if isinstance(node, ast.Name):
        return node.id in norms
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        return _is_norm_of_upstream(node.left, tainted, norms) or _is_norm_of_upstream(node.right, tainted, norms)
    if isinstance(node, ast.Call) and _called(node) in _NORM_CALLS:
        return _mentions(node, tainted)
    return False


def _use(node: ast.AST, tainted: set[str], norms: set[str]) -> set[str]:
    if isinstance(node, ast.Call):
        name = _called(node)
        args = [*node.args, *(k.value for k in node.keywords)]
        if name in _CLIP_CALLS and node.args and _mentions(node.args[0], tainted):
            return {CLIP}
        if name in _NORMALISE_CALLS and args and _mentions(args[0], tainted):
            return {NORMALISE}
        if name in _DIVISIONS and len(node.args) >= 2 and _mentions(node.args[0], tainted) \
                and _is_norm_of_upstream(node.args[1], tainted, norms):
            return {NORMALISE}
        if name in _MULTIPLY and len(node.args) >= 2 and any(
                _is_inverse_norm(a, tainted, norms) for a in node.args[:2]):
            return {NORMALISE}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _mentions(node.left, tainted) \
            and _is_norm_of_upstream(node.right, tainted, norms):
        return {NORMALISE}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and (
            _is_inverse_norm(node.left, tainted, norms) or _is_inverse_norm(node.right, tainted, norms)):
        return {NORMALISE}
    return set()


def _is_inverse_norm(node: ast.AST, tainted: set[str], norms: set[str]) -> bool:
    """``tf.math.rsqrt(tf.reduce_sum(dy * dy))`` or ``1 / tf.norm(dy)``."""
    if isinstance(node, ast.Call) and _called(node) == "rsqrt":
        return _mentions(node, tainted)
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.left, ast.Constant) \
        and _is_norm_of_upstream(node.right, tainted, norms)
