"""CG013 upstream-unused: grad never reads its upstream gradient."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.codes import CG013
from cg_lint.findings import Finding
from cg_lint.model.records import GradFn
from cg_lint.rules.base import LintContext, Rule

# calls that read only a tensor's shape or dtype, never its values
_SHAPE_ONLY = frozenset({"ones_like", "zeros_like", "shape", "size", "rank", "fill", "ones", "zeros",
                         "shape_n", "broadcast_to"})
# values that say "no gradient flows here" on purpose
_ZERO_CALLS = frozenset({"zeros_like", "zeros"})


class UpstreamUnused(Rule):
    """Grad never reads its upstream gradient.

    ## What it does
    Flags a gradient function that never reads the upstream gradient TF passes it (`dy`, or every
    parameter of `*upstreams`), or reads only its shape (`tf.ones_like(dy)`, `dy.shape`), or
    replaces it before any use (`dy = tf.ones_like(dy)`), while it returns a gradient that is not
    zero. A grad that returns only `None` or zeros (an intentional stop) is fine, and so is one
    that hands the upstream to a helper, unless the helper is a plain function of the file that
    never reads the parameter it lands in (or reads only its shape).

    ## Why is this bad?
    `grad` computes a vector-Jacobian product: TF passes the gradient of the loss with respect to
    the outputs, and grad must multiply it through (the chain rule). A grad that ignores it returns
    the same gradient whatever the loss above does, so the result is right only for a loss that is
    the plain sum of the outputs. As soon as the loss is averaged over a batch, weighted, or scaled
    (mixed-precision loss scaling, `tf.reduce_mean`), the gradients are silently wrong, eagerly and
    under `tf.function`. A check with `tf.reduce_sum` as the loss never shows it.

    ## Example
    ```python
    @tf.custom_gradient
    def hard_sigmoid(x):
        def grad(dy):
            return tf.where(tf.abs(x) < 1.0, 0.5, 0.0)
        return tf.clip_by_value(0.5 * x + 0.5, 0.0, 1.0), grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def hard_sigmoid(x):
        def grad(dy):
            return dy * tf.where(tf.abs(x) < 1.0, 0.5, 0.0)
        return tf.clip_by_value(0.5 * x + 0.5, 0.0, 1.0), grad
    ```

    ## Fix safety
    No automatic fix: where the upstream belongs in the product is the author's call.

    ## Known limitations
    Only the grad's own body (nested functions and lambdas included) is read: an upstream handed to
    any call counts as used. A grad with several upstreams is reported only when it reads none of
    them.
    """

    code = CG013
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def straight_through(x):
    return tf.round(x), lambda dy: dy

@tf.custom_gradient
def reverse(x):
    def grad(dy):
        return _flip(dy)  # handed to a helper: used
    return tf.identity(x), grad

def _flip(g):
    return -g

# tf: grad(reverse, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def frozen(x, scale):
    def grad(dy):
        return tf.zeros_like(x), None  # no gradient on purpose
    return x * scale, grad

# tf: grad(frozen, [1.0, 2.0], 3.0) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair(x):
    def grad(dy_sum, dy_prod):  # one upstream per output: reading one of them is enough here
        return dy_sum + dy_prod * 0.0
    return (x + 1.0, x * 0.0), grad

# tf: grad(pair, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

def _gate(x, g):
    return _masked(g, tf.abs(x) <= 1.0)  # handed on again: read

def _masked(g, mask):
    return tf.where(mask, g, tf.zeros_like(g))

@tf.custom_gradient
def hard_tanh(x):
    def grad(dy):
        return _gate(x, dy)
    return tf.clip_by_value(x, -1.0, 1.0), grad

# tf: grad_scaled(hard_tanh, 3.0, [0.5, 2.0]) => both ok [[3.0, 0.0]]
""",
        """
import tensorflow as tf

def _stop(dy):
    del dy
    return None  # no gradient at all: a deliberate stop, not a dropped upstream

@tf.custom_gradient
def frozen(x):
    def grad(dy):
        return _stop(dy)
    return tf.identity(x), grad

# tf: grad(frozen, [1.0, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def hard_sigmoid(x):
    def grad(dy):  # expect: CG013
        return tf.where(tf.abs(x) < 1.0, 0.5, 0.0)
    return tf.clip_by_value(0.5 * x + 0.5, 0.0, 1.0), grad

# tf: grad_scaled(hard_sigmoid, 4.0, [0.5, 0.2]) => both wrong [[2.0, 2.0]]
""",
        """
import tensorflow as tf

@tf.custom_gradient
def cube(x):
    return x ** 3, lambda dy: 3.0 * tf.ones_like(dy) * x ** 2  # expect: CG013

# tf: grad_scaled(cube, 0.5, [1.0, 2.0]) => both wrong [[1.5, 6.0]]
""",
        """
import tensorflow as tf

@tf.custom_gradient
def square(x):
    def grad(dy):  # expect: CG013
        dy = tf.ones_like(x)
        return 2.0 * x * dy
    return x * x, grad

# tf: grad_scaled(square, 3.0, [1.0, 2.0]) => both wrong [[6.0, 12.0]]
""",
        """
import tensorflow as tf

def _slope(x, dy):
    del dy  # the helper's own derivative: the upstream is dropped here
    return tf.cast(tf.abs(x) <= 1.0, x.dtype)

@tf.custom_gradient
def hard_tanh(x):
    def grad(dy):  # expect: CG013
        return _slope(x, dy)
    return tf.clip_by_value(x, -1.0, 1.0), grad

# tf: grad_scaled(hard_tanh, 3.0, [0.5, 2.0]) => both wrong [[3.0, 0.0]]
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            for grad in record.grads:
                names = _upstream_names(grad)
                if not names or grad.is_custom_gradient or _reads_upstream(ctx, grad, names):
                    continue
                if all(_is_zero(ctx, value) for site in grad.returns for value in _leaves(site.value)):
                    continue  # None or zeros everywhere: a deliberate stop
                shown = ", ".join(f"'{n}'" for n in names)
                yield self.finding(ctx, grad.line, grad.column, (
                    f"grad of '{record.name}' never reads its upstream gradient ({shown}): it returns the same "
                    f"gradient whatever the loss above is, so a loss that is averaged, weighted or scaled "
                    f"(tf.reduce_mean, loss scaling) silently gets wrong gradients, eagerly and under "
                    f"tf.function; multiply it through (the chain rule: return dy * d_output/d_input)"),
                    record.qualname)


def _upstream_names(grad: GradFn) -> list[str]:
    names = [p.name for p in grad.upstream]
    if grad.signature.varargs is not None:
        names.append(grad.signature.varargs.name)
    return names


def _reads_upstream(ctx: LintContext, grad: GradFn, names: list[str]) -> bool:
    """Whether any value of an upstream reaches the result: read other than for its shape, and
    not after it was replaced (``dy = tf.ones_like(dy)`` first)."""
    replaced = _replaced_first(ctx, grad, names)
    for node in ctx.index.walk.walk(grad.node):
        if type(node) is not cst.Name or node.value not in names or node.value in replaced:
            continue
        parent = ctx.index.parent(node)
        if type(parent) in (cst.Param, cst.AssignTarget) or type(parent) is cst.Attribute and parent.attr is node:
            continue
        if not _shape_only(ctx, node) and not _dropped_by_helper(ctx, node):
            return True
    # locals()/vars() may hand it on
    return any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value in ("locals", "vars")
               for n in ctx.index.walk.walk(grad.node))


def _dropped_by_helper(ctx: LintContext, name: cst.Name) -> bool:
    """``_slope(x, dy)`` where ``_slope`` is a plain function of this file that never reads the
    parameter ``dy`` lands in (or only its shape): handing the upstream there uses nothing of it."""
    arg = ctx.index.parent(name)
    call = ctx.index.parent(arg)
    if type(arg) is not cst.Arg or arg.value is not name or arg.star or type(call) is not cst.Call \
            or type(call.func) is not cst.Name:
        return False
    defs = ctx.index.lookup_function(call.func)
    if len(defs) != 1 or type(defs[0]) is not cst.FunctionDef or defs[0].decorators:
        return False
    helper = defs[0]
    if any(r.node is helper for r in ctx.records) or type(helper.params.star_arg) is cst.Param \
            or helper.params.star_kwarg is not None:
        return False  # a custom gradient, or `*args`/`**kwargs` that may hand it on
    params = [*helper.params.posonly_params, *helper.params.params]
    if arg.keyword is not None:
        target = next((p for p in params if p.name.value == arg.keyword.value), None)
    else:
        index = [a for a in call.args if a.keyword is None].index(arg)
        target = params[index] if index < len(params) else None
    if target is None:
        return False
    values = [n.value for n in ctx.index.walk.own_nodes(helper.body) if type(n) is cst.Return]
    if not values or any(not _leaves(v) or all(_is_zero(ctx, x) for x in _leaves(v)) for v in values):
        return False  # nothing, None or zeros: a deliberate stop, whatever grad does with it
    for node in ctx.index.walk.walk(helper):
        if type(node) is not cst.Name or node.value != target.name.value or node is target.name:
            continue
        parent = ctx.index.parent(node)
        if type(parent) is cst.Del or type(parent) is cst.Attribute and parent.attr is node:
            continue
        if not _shape_only(ctx, node):
            return False  # read (or rebound: not followed)
    return True


def _shape_only(ctx: LintContext, name: cst.Name) -> bool:
    parent = ctx.index.parent(name)
    if type(parent) is cst.Attribute and parent.value is name and parent.attr.value in ("shape", "dtype", "ndim"):
        return True
    if type(parent) is cst.Arg:
        call = ctx.index.parent(parent)
        if type(call) is cst.Call and call.args and call.args[0] is parent:
            callee = (call_name(call, ctx.index.qualnames) or "").rsplit(".", 1)[-1]
            return callee in _SHAPE_ONLY
    return False


def _replaced_first(ctx: LintContext, grad: GradFn, names: list[str]) -> set[str]:
    """Upstreams whose first statement in grad rebinds them to a value that does not read them
    (other than for the shape)."""
    body = grad.node.body
    if type(body) is not cst.IndentedBlock:
        return set()
    out: set[str] = set()
    for stmt in body.body:
        if type(stmt) is not cst.SimpleStatementLine or type(stmt.body[0]) is not cst.Assign:
            break
        assign = stmt.body[0]
        targets = [t.target for t in assign.targets]
        reads = [n for n in ctx.index.walk.walk(assign.value)
                 if type(n) is cst.Name and n.value in names and not _shape_only(ctx, n)]
        for target in targets:
            if type(target) is cst.Name and target.value in names and not reads:
                out.add(target.value)
    return out


def _leaves(value: cst.BaseExpression | None) -> list[cst.BaseExpression | None]:
    if type(value) in (cst.Tuple, cst.List):
        return [x for e in value.elements for x in _leaves(e.value)]  # type: ignore[union-attr]
    return [value]


def _is_zero(ctx: LintContext, value: cst.BaseExpression | None) -> bool:
    if value is None or type(value) is cst.Name and value.value == "None":
        return True
    if type(value) in (cst.Integer, cst.Float):
        return float(value.value) == 0.0  # type: ignore[union-attr]
    if type(value) is cst.Call:
        return (call_name(value, ctx.index.qualnames) or "").rsplit(".", 1)[-1] in _ZERO_CALLS
    return False
