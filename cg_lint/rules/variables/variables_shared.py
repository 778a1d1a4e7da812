"""What the variables rules share: how a read variable is listed in a message, the grads that must
return (input_grads, variable_grads), and the literal a returned value stands for."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.tensors import statement_of
from cg_lint.model.records import CustomGradient, GradFn, VariableRead
from cg_lint.rules.base import LintContext
from cg_lint.syntax.environments import literal_binding

_KINDS = {"variable": "tf.Variable", "created": "tf.Variable created inside", "attribute": "variable attribute",
          "layer": "Keras layer with weights", "helper": "tf.Variable read in a helper"}


def listing(reads: list[VariableRead], limit: int = 3) -> str:
    shown = ", ".join(f"{r.text} ({_KINDS.get(r.kind, r.kind)}, line {r.line})" for r in reads[:limit])
    more = len(reads) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def pair_grads(record: CustomGradient) -> Iterator[GradFn]:
    """Grads that TF calls with ``variables=`` and that must return (input_grads, variable_grads)."""
    if not record.variable_reads:
        return
    for grad in record.grads:
        if grad.accepts_variables and not grad.is_custom_gradient:
            yield grad


def resolved_literal(expr: cst.BaseExpression | None, ctx: LintContext) -> cst.BaseExpression | None:
    """``expr``, or the literal tuple/list a name is bound to exactly once."""
    if type(expr) is cst.Name:
        owner = ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
        return literal_binding(expr, ctx.index.env_for(owner)) or expr
    return expr


def literal_elements(expr: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
    if type(expr) in (cst.Tuple, cst.List) and not any(type(e) is cst.StarredElement for e in expr.elements):
        return [e.value for e in expr.elements]
    return None


def statement_position(ctx: LintContext, node: cst.CSTNode) -> tuple[int, int]:
    return ctx.position(statement_of(ctx.index, node))
