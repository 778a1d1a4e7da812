"""The truth tests of a body: every expression whose Python truth value it takes (``if``, ``while``,
``assert``, ``and``/``or``/``not``, ``bool()``, comparing builtins), with the construct that takes it."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import body_nodes
from cg_lint.model.records import FuncNode
from cg_lint.rules.base import LintContext


def truth_tests(ctx: LintContext, func: FuncNode) -> Iterator[tuple[cst.BaseExpression, str]]:
    """Every expression whose Python truth value a body takes, with the construct that takes it."""
    consumed: set[int] = set()

    def tested(expr: cst.BaseExpression, construct: str) -> Iterator[tuple[cst.BaseExpression, str]]:
        consumed.add(id(expr))
        if type(expr) is cst.BooleanOperation:
            yield from tested(expr.left, construct)
            yield from tested(expr.right, construct)
        elif type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            yield from tested(expr.expression, construct)
        else:
            yield expr, construct

    for node in body_nodes(func, ctx.index):
        if type(node) is cst.If:
            yield from tested(node.test, "if")
        elif type(node) is cst.While:
            yield from tested(node.test, "while")
        elif type(node) is cst.IfExp:
            yield from tested(node.test, "conditional expression")
        elif type(node) is cst.Assert:
            yield from tested(node.test, "assert")
        elif type(node) is cst.CompIf:
            yield from tested(node.test, "if")
        elif type(node) is cst.BooleanOperation and id(node) not in consumed:
            # `a and b` outside a test takes the truth value of `a` only
            consumed.add(id(node))
            yield from tested(node.left, "and" if type(node.operator) is cst.And else "or")
        elif (type(node) is cst.UnaryOperation and type(node.operator) is cst.Not
              and id(node) not in consumed):
            yield from tested(node.expression, "not")
        elif (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "bool"
              and len(node.args) == 1 and not node.args[0].star):
            yield from tested(node.args[0].value, "bool()")
        elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in _COMPARING:
            yield from _compared(ctx, node)
        elif type(node) is cst.Comparison and len(node.comparisons) > 1:
            yield from _chained(node)


# builtins that take the truth value of (or compare) what they are given
_COMPARING = frozenset({"max", "min", "any", "all", "sorted"})


def _compared(ctx: LintContext, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """``max(a, b)`` compares a and b; ``any([a, b])`` tests each element (iterating one tensor is
    CG010's business)."""
    fn = call.func.value  # type: ignore[attr-defined]
    if call_name(call, ctx.index.qualnames) != fn or any(a.star for a in call.args):
        return
    args = [a.value for a in call.args if a.keyword is None]
    if fn in ("max", "min") and len(args) >= 2:
        for arg in args:
            yield arg, f"{fn}()"
    elif len(args) == 1 and type(args[0]) in (cst.List, cst.Tuple):
        for element in args[0].elements:
            if type(element) is cst.Element:
                yield element.value, f"{fn}()"


_NOT_TENSOR_RESULT = (cst.Is, cst.IsNot, cst.In, cst.NotIn)


def _chained(node: cst.Comparison) -> Iterator[tuple[cst.BaseExpression, str]]:
    """``a < x < b`` is ``(a < x) and (x < b)``: Python takes the truth value of every comparison
    but the last, a tensor when one of its operands is (``is``/``in`` give Python bools)."""
    left = node.left
    for target in node.comparisons[:-1]:
        if type(target.operator) not in _NOT_TENSOR_RESULT:
            yield left, "chained comparison"
            yield target.comparator, "chained comparison"
        left = target.comparator
