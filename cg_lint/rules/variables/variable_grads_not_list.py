"""CG006 variable-grads-not-list: variable gradients returned as a tuple."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import Tensors
from cg_lint.codes import CG006
from cg_lint.findings import Edit, Finding, Fix
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.variables.variables_shared import literal_elements, pair_grads, resolved_literal, statement_position


class VariableGradsNotList(Rule):
    """Variable gradients returned as a tuple (or a bare tensor) instead of a list.

    ## What it does
    When grad returns `(input_grads, variable_grads)` for a forward that reads variables, checks that
    `variable_grads` is a list: flags a tuple literal, `tuple(...)`, or a single tensor.

    ## Why is this bad?
    TF concatenates the input gradients (a list) with `variable_grads`:
    `TypeError: can only concatenate list (not "tuple") to list`, eagerly and under `tf.function`,
    when the gradient is taken.

    ## Example
    ```python
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        w_value = tf.convert_to_tensor(w)
        def grad(dy, variables=None):
            return dy * w_value, (tf.reduce_sum(dy * x),)
        return x * w_value, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        w_value = tf.convert_to_tensor(w)
        def grad(dy, variables=None):
            return dy * w_value, [tf.reduce_sum(dy * x)]
        return x * w_value, grad
    ```

    ## Fix safety
    Safe for a literal tuple in the returned pair (`return dx, (g,)` becomes `return dx, [g]`): TF
    could not use the tuple, and the list holds the same gradients in the same order. A tuple reached
    through a name, `tuple(...)` or a single tensor is not fixed automatically.

    ## Known limitations
    Only checked when the forward is known to read variables.
    """

    code = CG006
    fixable = True
    VALID = (
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        var_grads = [tf.reduce_sum(dy * x) for _ in variables]
        return (dy * w_value,), var_grads
    return x * w_value, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, y):
    def grad(dz, variables=None):  # no variable read: (dx, dy) are both input gradients
        return dz, (dz * 2.0)
    return x + y, grad
""",
    )
    INVALID = (
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        return dy * w_value, (tf.reduce_sum(dy * x),)  # expect: CG006
    return x * w_value, grad
""",
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        dw = tf.reduce_sum(dy * x)
        return dy * w_value, dw  # expect: CG006
    return x * w_value, grad
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors: Tensors | None = None
            for grad in pair_grads(record):
                for site in grad.returns:
                    elements = literal_elements(resolved_literal(site.value, ctx))
                    if elements is None or len(elements) != 2:
                        continue
                    var_grads = resolved_literal(elements[1], ctx)
                    if type(var_grads) is cst.Tuple or (
                            type(var_grads) is cst.Call and call_name(var_grads, ctx.index.qualnames) == "tuple"):
                        what = f"a tuple ({describe(elements[1])})"
                        error = "TypeError: can only concatenate list (not \"tuple\") to list"
                    else:
                        tensors = tensors or Tensors(ctx.index, record)
                        if not tensors.is_tensor(elements[1]):
                            continue
                        what = f"a single tensor ({describe(elements[1])})"
                        error = "a TypeError or an unrelated length/iteration error"
                    line, column = statement_position(ctx, site.anchor)
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' returns its variable gradients as {what}: when the gradient is "
                        f"taken, eagerly and under tf.function, TF raises {error}; return a list with one gradient "
                        f"per variable"), record.qualname, _list_fix(ctx, site.value, elements[1]))


def _list_fix(ctx: LintContext, pair: cst.BaseExpression | None, var_grads: cst.BaseExpression) -> Fix | None:
    """``return dx, (g,)`` -> ``return dx, [g]``: the tuple's parentheses become brackets, and a
    trailing comma with nothing but blanks around it goes. Everything else between the brackets
    (comments, line breaks, a comma a comment follows) stays as written."""
    if (type(pair) is not cst.Tuple or type(var_grads) is not cst.Tuple
            or pair.elements[1].value is not var_grads or len(var_grads.lpar) != 1 or len(var_grads.rpar) != 1):
        return None
    # an Element's range is its value's with the value's parentheses: here exactly "(" ... ")"
    element = pair.elements[1]
    (l1, c1), (l2, c2) = ctx.index.position(element), ctx.index.end_position(element)
    edits = [Edit(l1, c1, l1, c1 + 1, "[")]
    items = var_grads.elements
    comma = items[-1].comma if items else None
    if (isinstance(comma, cst.Comma) and type(comma.whitespace_before) is cst.SimpleWhitespace
            and type(comma.whitespace_after) is cst.SimpleWhitespace
            and type(var_grads.rpar[0].whitespace_before) is cst.SimpleWhitespace):
        end_line, end_column = ctx.index.end_position(items[-1])
        edits.append(Edit(end_line, end_column, l2, c2 - 1, ""))
    edits.append(Edit(l2, c2 - 1, l2, c2, "]"))
    return Fix("Return the variable gradients as a list", tuple(edits), safe=True)
