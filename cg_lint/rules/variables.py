"""Variables rules: the `variables=` contract of grad when the forward reads trainable variables.

Which variables a forward or grad reads is decided once, in ``cg_lint.analyses.variable_reads``
(before any rule runs); these rules only read ``record.variable_reads`` and ``grad.variable_reads``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import Tensors, statement_of
from cg_lint.codes import CG004, CG005, CG006, CG007, CG018
from cg_lint.findings import Finding, Fix
from cg_lint.model.records import CustomGradient, GradFn, VariableRead
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.rules.edits import insert_after, replace_node
from cg_lint.syntax.environments import literal_binding

_KINDS = {"variable": "tf.Variable", "created": "tf.Variable created inside", "attribute": "variable attribute",
          "layer": "Keras layer with weights"}


def _listing(reads: list[VariableRead], limit: int = 3) -> str:
    shown = ", ".join(f"{r.text} ({_KINDS.get(r.kind, r.kind)}, line {r.line})" for r in reads[:limit])
    more = len(reads) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _pair_grads(record: CustomGradient) -> Iterator[GradFn]:
    """Grads that TF calls with ``variables=`` and that must return (input_grads, variable_grads)."""
    if not record.variable_reads:
        return
    for grad in record.grads:
        if grad.accepts_variables and not grad.is_custom_gradient:
            yield grad


def _literal(expr: cst.BaseExpression | None, ctx: LintContext) -> cst.BaseExpression | None:
    """``expr``, or the literal tuple/list a name is bound to exactly once."""
    if type(expr) is cst.Name:
        owner = ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
        return literal_binding(expr, ctx.index.env_for(owner)) or expr
    return expr


def _elements(expr: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
    if type(expr) in (cst.Tuple, cst.List) and not any(type(e) is cst.StarredElement for e in expr.elements):
        return [e.value for e in expr.elements]
    return None


def _line(ctx: LintContext, node: cst.CSTNode) -> tuple[int, int]:
    return ctx.position(statement_of(ctx.index, node))


class MissingVariablesArgument(Rule):
    """Forward reads trainable variables but grad accepts neither `variables` nor `**kwargs`.

    ## What it does
    Flags a gradient function without a `variables` parameter (or `**kwargs`) when its forward reads a
    trainable variable: a module-level or enclosing `tf.Variable`, one created inside, a `self.<attr>`
    the class assigns from `tf.Variable`/`add_weight` (or a Keras layer's `kernel`/`bias`), a Keras
    layer with weights called inside, or `tf.compat.v1.get_variable`.

    ## Why is this bad?
    TensorFlow watches the variables the forward reads and calls `grad(*upstream, variables=...)`.
    When grad cannot take that keyword, the forward call itself raises `TypeError: @tf.custom_gradient
    grad_fn must accept keyword argument 'variables', since function uses variables: [...]`, eagerly
    and under `tf.function` (in a Keras layer, at the first call).

    ## Example
    ```python
    w = tf.Variable([1.0, 2.0, 3.0])

    @tf.custom_gradient
    def scale(x):
        def grad(dy):
            return dy * w
        return x * w, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable([1.0, 2.0, 3.0])

    @tf.custom_gradient
    def scale(x):
        w_value = tf.convert_to_tensor(w)
        def grad(dy, variables=None):
            return dy * w_value, [dy * x for _ in variables]
        return x * w_value, grad
    ```
    Or pass the variable in as an input (`scale(x, w)`): TF then treats it like any input.

    ## Fix safety
    Safe, and offered only when every `return` of grad already is `(input_grads, [variable_grads])`:
    then adding `variables=None` to grad's signature is the whole defect. Otherwise grad must also
    return the variables' gradients, which has to be written by hand.

    ## Known limitations
    Variables read through helper functions, containers other than literal lists, or attributes of
    objects other than `self` are not seen. `trainable=` set to a non-literal value is treated as
    non-trainable.
    """

    code = CG004
    fixable = True
    VALID = (
        """
import tensorflow as tf

counter = tf.Variable(0.0, trainable=False)  # not watched by TF

@tf.custom_gradient
def f(x):
    y = x + counter
    return y, lambda dy: dy
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x, w):  # the variable is passed in as an input: TF leaves it out of `variables`
    def grad(dy):
        return dy * w, dy * x
    return x * w, grad

y = f(tf.constant(1.0), w)
""",
        """
import tensorflow as tf

class Scale(tf.keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(shape=shape[-1:])
        self.units = 3
        self.act = tf.nn.relu

    def call(self, x):
        @tf.custom_gradient
        def f(x, k):
            y = self.act(x * k) * self.units  # self.units and self.act are not variables
            def grad(dy):
                return dy * k, dy * x
            return y, grad
        return f(x, tf.convert_to_tensor(self.kernel))
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    def grad(dy, **kwargs):
        return dy * w, [dy * x for _ in kwargs["variables"]]
    return x * w, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, *variables):  # variables passed as inputs
    y = x * variables[0]
    return y, lambda dy: [dy * variables[0], dy * x]
""",
        """
import tensorflow as tf

drop = tf.keras.layers.Dropout(0.5)  # no weights

@tf.custom_gradient
def f(x):
    return drop(x), lambda dy: dy
""",
    )
    INVALID = (
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scale(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy):  # expect: CG004
        return dy * w_value, [tf.reduce_sum(dy * x)]
    return x * w_value, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    def grad(dy):  # expect: CG004
        return dy * 2.0
    return x * w, grad
""",
        """
import tensorflow as tfx

@tfx.custom_gradient
def f(x):
    v = tfx.Variable(1.0)
    y = x * v
    return y, lambda dy: dy  # expect: CG004
""",
        """
import tensorflow as tf

class Dense(tf.keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 4))

    def call(self, x):
        @tf.custom_gradient
        def forward(x):
            def grad(dy):  # expect: CG004
                return tf.matmul(dy, tf.transpose(w_value))
            w_value = tf.convert_to_tensor(self.w)
            return tf.matmul(x, w_value), grad
        return forward(x)
""",
        """
import tensorflow as tf

class Block(tf.Module):
    def __init__(self):
        self.proj = tf.keras.layers.Dense(4)

    @tf.custom_gradient
    def __call__(self, x):
        y = self.proj(x)
        return y, self._grad

    def _grad(self, dy):  # expect: CG004
        return dy
""",
        """
import tensorflow.compat.v1 as tf1

@tf1.custom_gradient
def f(x):
    w = tf1.get_variable("w", shape=[])
    def grad(dy):  # expect: CG004
        return dy * w
    return x * w, grad
""",
        """
import tensorflow as tf

class MyDense(tf.keras.layers.Dense):
    def call(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy):  # expect: CG004
                return tf.matmul(dy, self.kernel, transpose_b=True)
            return tf.matmul(x, self.kernel), grad
        return f(x)
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            if not record.variable_reads:
                continue
            for grad in record.grads:
                if grad.accepts_variables:
                    continue
                who = "its grad" if grad.name == "<lambda>" else f"its grad '{grad.name}'"
                yield self.finding(ctx, grad.line, grad.column, (
                    f"'{record.name}' reads {plural(len(record.variable_reads), 'trainable variable')} "
                    f"({_listing(record.variable_reads)}) but {who} accepts neither 'variables' nor **kwargs: "
                    f"TF raises TypeError at the forward call, eagerly and under tf.function (grad_fn must accept "
                    f"keyword argument 'variables'); add variables=None and return (input_grads, variable_grads)"),
                    record.qualname, _add_variables_fix(ctx, grad))


def _add_variables_fix(ctx: LintContext, grad: GradFn) -> Fix | None:
    """``variables=None`` after grad's last parameter, only when every return already is
    ``(input_grads, [variable_grads])``: then the signature is the whole defect."""
    if not grad.returns or type(grad.node) is not cst.FunctionDef:
        return None
    for site in grad.returns:
        elements = _elements(_literal(site.value, ctx))
        if elements is None or len(elements) != 2 or type(elements[1]) is not cst.List:
            return None
    params = grad.node.params
    last = [*params.params, *([params.star_arg] if type(params.star_arg) is cst.Param else []),
            *params.kwonly_params][-1:]
    if not last:
        return None
    end = last[0].default or last[0].annotation or last[0].name
    return Fix("Add 'variables=None' to grad", (insert_after(ctx.index, end, ", variables=None"),), safe=True)


class VariablesReturnNotPair(Rule):
    """Grad takes `variables` but a return is not an `(input_grads, variable_grads)` pair.

    ## What it does
    When the forward reads trainable variables (see CG004) and grad accepts `variables`, checks that
    every `return` of grad gives exactly two things: the input gradients and the list of variable
    gradients.

    ## Why is this bad?
    TF runs `input_grads, variable_grads = grad_fn(*upstream, variables=variables)`. Returning only
    the input gradients fails with `ValueError: too many values to unpack (expected 2)` eagerly, and
    with `OperatorNotAllowedInGraphError: Iterating over a symbolic tf.Tensor` under `tf.function`
    (or a "returned too few gradients" `InternalError` when the gradient has two rows). None of these
    messages mention variables.

    ## Example
    ```python
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        def grad(dy, variables=None):
            return dy * w
        return x * w, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable(3.0)

    @tf.custom_gradient
    def scale(x):
        w_value = tf.convert_to_tensor(w)
        def grad(dy, variables=None):
            return dy * w_value, [tf.reduce_sum(dy * x) for _ in variables]
        return x * w_value, grad
    ```

    ## Fix safety
    No automatic fix.

    ## Known limitations
    Only checked when the forward is known to read variables; returns built by helper calls are not.
    """

    code = CG005
    VALID = (
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        grads = (dy * w_value, [dy * x])
        return grads
    return x * w_value, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):  # declared, but the forward reads no variable
        return dy
    return tf.identity(x), grad
""",
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return helper(dy, variables)  # built elsewhere: not checked
    return x * w, grad
""",
    )
    INVALID = (
        """
import tensorflow as tf

w = tf.Variable(3.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return dy * w  # expect: CG005
    return x * w, grad
""",
        """
import tensorflow as tf

class Layer(tf.keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=())
        self.b = self.add_weight(shape=())

    def call(self, x):
        @tf.custom_gradient
        def f(x):
            y = x * self.w + self.b
            def grad(dy, **kwargs):
                return dy * y, dy, dy  # expect: CG005
            return y, grad
        return f(x)
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors: Tensors | None = None
            for grad in _pair_grads(record):
                for site in grad.returns:
                    value = _literal(site.value, ctx)
                    elements = _elements(value)
                    if site.value is None:
                        what = "nothing"
                    elif elements is not None:
                        if len(elements) == 2:
                            continue
                        what = plural(len(elements), "value")
                    else:
                        tensors = tensors or Tensors(ctx.index, record)
                        if not tensors.is_tensor(site.value):
                            continue
                        what = f"a single tensor ({describe(site.value)})"
                    line, column = _line(ctx, site.anchor)
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' returns {what} but '{record.name}' reads variables "
                        f"({_listing(record.variable_reads, 2)}): TF unpacks (input_grads, variable_grads) and fails "
                        f"eagerly and under tf.function with errors that do not mention variables; return "
                        f"(input_grads, [one gradient per variable in variables])"), record.qualname)


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
            for grad in _pair_grads(record):
                for site in grad.returns:
                    elements = _elements(_literal(site.value, ctx))
                    if elements is None or len(elements) != 2:
                        continue
                    var_grads = _literal(elements[1], ctx)
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
                    line, column = _line(ctx, site.anchor)
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' returns its variable gradients as {what}: when the gradient is "
                        f"taken, eagerly and under tf.function, TF raises {error}; return a list with one gradient "
                        f"per variable"), record.qualname, _list_fix(ctx, site.value, elements[1]))


def _list_fix(ctx: LintContext, pair: cst.BaseExpression | None, var_grads: cst.BaseExpression) -> Fix | None:
    """``return dx, (g,)`` -> ``return dx, [g]``. The whole pair is rewritten: libcst positions exclude a
    node's parentheses, so replacing only the tuple would leave ``([g])`` behind."""
    if (type(pair) is not cst.Tuple or type(var_grads) is not cst.Tuple
            or pair.elements[1].value is not var_grads):
        return None
    items = list(var_grads.elements)
    if items:
        items[-1] = items[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new_pair = pair.with_changes(elements=[pair.elements[0], pair.elements[1].with_changes(value=cst.List(items))])
    return Fix("Return the variable gradients as a list", (replace_node(ctx.index, pair, new_pair),), safe=True)


class PositionalVariableGrads(Rule):
    """Variable gradients listed by position (`[g_w, g_b]`) instead of matched to `variables`.

    ## What it does
    Flags a grad that returns its variable gradients as a literal list of two or more different
    entries, when the forward reads variables.

    ## Why is this bad?
    The order of `variables` is not the order in which the forward reads them. Eagerly it comes from
    a set and changes from run to run; under `tf.function` it is sorted by variable name. A list
    written in read order silently sends each gradient to the wrong variable (no error; the optimizer
    then trains with wrong gradients).

    ## Example
    ```python
    w = tf.Variable(2.0, name="w")
    b = tf.Variable(1.0, name="b")

    @tf.custom_gradient
    def affine(x):
        def grad(dy, variables=None):
            return dy * 2.0, [tf.reduce_sum(dy * x), tf.reduce_sum(dy)]
        return x * w + b, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable(2.0, name="w")
    b = tf.Variable(1.0, name="b")

    @tf.custom_gradient
    def affine(x):
        def grad(dy, variables=None):
            by_var = {w.ref(): tf.reduce_sum(dy * x), b.ref(): tf.reduce_sum(dy)}
            return dy * 2.0, [by_var[v.ref()] for v in variables]
        return x * w + b, grad
    ```

    ## Fix safety
    No automatic fix.

    ## Known limitations
    Lists built in a loop (`grads.append(...)`) in read order are not detected.
    """

    code = CG007
    VALID = (
        """
import tensorflow as tf

w = tf.Variable(2.0)
b = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        var_grads = [tf.reduce_sum(dy * x) if v is w else tf.reduce_sum(dy) for v in variables]
        return dy * 2.0, var_grads
    return x * w + b, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)
b = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return dy, [None, None]  # identical entries: the order does not matter
    return x * w + b, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return dy, [tf.reduce_sum(dy * x)]  # one variable: nothing to mix up
    return x * w, grad
""",
    )
    INVALID = (
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")
b = tf.Variable(1.0, name="b")

@tf.custom_gradient
def affine(x):
    def grad(dy, variables=None):
        return dy * 2.0, [tf.reduce_sum(dy * x), tf.reduce_sum(dy)]  # expect: CG007
    return x * w + b, grad
""",
        """
import tensorflow as tf

class Affine(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0)
        self.b = tf.Variable(1.0)

    def __call__(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy, variables=None):
                g_w, g_b = tf.reduce_sum(dy * x), tf.reduce_sum(dy)
                var_grads = [g_w, g_b]
                return dy, var_grads  # expect: CG007
            return x * self.w + self.b, grad
        return f(x)
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        module = cst.Module(body=[])
        for record in ctx.records:
            for grad in _pair_grads(record):
                for site in grad.returns:
                    elements = _elements(_literal(site.value, ctx))
                    if elements is None or len(elements) != 2:
                        continue
                    var_grads = _literal(elements[1], ctx)
                    entries = _elements(var_grads) if type(var_grads) is cst.List else None
                    if entries is None or len(entries) < 2:
                        continue
                    if len({module.code_for_node(e) for e in entries}) == 1:
                        continue
                    line, column = _line(ctx, site.anchor)
                    listed = describe(cast(cst.List, var_grads))
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' lists {len(entries)} variable gradients by position "
                        f"({listed}): TF passes 'variables' in an arbitrary order eagerly and sorted "
                        f"by name under tf.function, so gradients silently go to the wrong variables; match each "
                        f"v in variables by identity (v is w, or a dict keyed by v.ref())"), record.qualname)


class VariableReadInGrad(Rule):
    """A `tf.Variable` is read inside grad instead of captured in the forward.

    ## What it does
    Flags reads of variables (module-level or enclosing `tf.Variable`s, trainable or not,
    `self.<attr>` weights, Keras layers with weights) in the body of a gradient function.

    ## Why is this bad?
    grad runs later, in another context than the forward. Under `tf.function`, when the custom
    gradient is called inside a `tf.cond` branch, reading a variable in grad raises
    `AttributeError: Tensor.graph is undefined when eager execution is enabled.` (tensorflow#50170,
    still on TF 2.21). Under Keras mixed precision, grad runs outside the autocast scope, so the
    variable reads as float32 and ops mixing it with float16 gradients fail. The value read in grad can
    also differ from the one the forward used if the variable was updated in between.

    ## Example
    ```python
    w = tf.Variable(2.0)

    @tf.custom_gradient
    def scale(x):
        def grad(dy, variables=None):
            return dy * w, [tf.reduce_sum(dy * x) for _ in variables]
        return x * w, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable(2.0)

    @tf.custom_gradient
    def scale(x):
        w_value = tf.convert_to_tensor(w)  # read once, in the forward
        def grad(dy, variables=None):
            return dy * w_value, [tf.reduce_sum(dy * x) for _ in variables]
        return x * w_value, grad
    ```

    ## Fix safety
    No automatic fix.

    ## Known limitations
    Reads through the `variables` argument, helper functions or containers are not flagged.
    """

    code = CG018
    VALID = (
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        return dy * w_value, [tf.reduce_sum(dy * x) for v in variables]
    return x * w_value, grad
""",
        """
import tensorflow as tf

step = tf.Variable(0, trainable=False)

@tf.custom_gradient
def f(x):
    scale = tf.cast(step + 1, x.dtype)  # read in the forward, captured by grad
    def grad(dy):
        return dy / scale
    return x / scale, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        shape = w.shape  # metadata, not a read
        return dy, [tf.zeros(shape) for _ in variables]
    return x * w, grad
""",
    )
    INVALID = (
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scale(x):
    def grad(dy, variables=None):
        return dy * w, [tf.reduce_sum(dy * x) for _ in variables]  # expect: CG018
    return x * w, grad
""",
        """
import tensorflow as tf

weights = tf.Variable([1.0, 2.0])

@tf.custom_gradient
def linear_poly(x):
    poly = weights[1] * x + weights[0]
    def grad_fn(dpoly, variables):
        grad_xs = dpoly * weights[1]  # expect: CG018
        assert variables[0] is weights  # identity, not a read
        dy_dw = dpoly * tf.stack([x, tf.ones_like(x)])
        return grad_xs, [tf.reduce_sum(tf.reshape(dy_dw, [2, -1]), axis=1)]
    return poly, grad_fn
""",
        """
import tensorflow as tf

step = tf.Variable(0, trainable=False)

@tf.custom_gradient
def f(x):
    def grad(dy):
        return dy / tf.cast(step + 1, dy.dtype)  # expect: CG018
    return tf.identity(x), grad
""",
        """
import tensorflow as tf

class Dense(tf.keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(shape=(shape[-1], 2))

    def call(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy, variables=None):
                dx = tf.matmul(dy, self.kernel, transpose_b=True)  # expect: CG018
                return dx, [tf.matmul(x, dy, transpose_a=True) for _ in variables]
            return tf.matmul(x, self.kernel), grad
        return f(x)
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            for grad in record.grads:
                by_statement: dict[int, list[VariableRead]] = {}
                for read in grad.variable_reads:
                    by_statement.setdefault(id(statement_of(ctx.index, read.anchor)), []).append(read)
                for reads in by_statement.values():
                    first = reads[0]
                    names = ", ".join(r.text for r in reads)
                    noun = "variable" if len(reads) == 1 else "variables"
                    line, column = _line(ctx, first.anchor)
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' reads {noun} {names}: under tf.function, when the call is inside "
                        f"tf.cond, this raises AttributeError: Tensor.graph is undefined, and under Keras mixed "
                        f"precision it reads float32; read it once in the forward "
                        f"({_value_name(first)} = tf.convert_to_tensor({first.text})) and use that in grad"),
                        record.qualname)


def _value_name(read: VariableRead) -> str:
    base = read.text.rsplit(".", 1)[-1].split("[", 1)[0]
    return f"{base}_value"
