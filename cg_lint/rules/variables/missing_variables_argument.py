"""Variables rules: the `variables=` contract of grad when the forward reads trainable variables.

Which variables a forward or grad reads is decided once, in ``cg_lint.analyses.variable_reads``
(before any rule runs); these rules only read ``record.variable_reads`` and ``grad.variable_reads``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

from cg_lint.analyses.contexts import asserts_eager, context_of
from cg_lint.analyses.counting import ABSENT, variables_branch
from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import Tensors, statement_of
from cg_lint.analyses.variable_reads import reads_no_variable
from cg_lint.codes import CG004, CG005, CG006, CG007, CG018
from cg_lint.findings import Edit, Finding, Fix
from cg_lint.model.records import CustomGradient, GradFn, VariableRead
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.rules.edits import insert_after
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


def _mutated(ctx: LintContext, name: cst.Name) -> bool:
    """The list a name is bound to may change after it is built: a method is called on it
    (``append``, ``extend``...), an item is assigned, or it is augmented (``+=``)."""
    owner = ctx.index.enclosing(name, (cst.FunctionDef, cst.Lambda))
    if owner is None:
        return True
    for node in ctx.index.walk.function_nodes(owner):  # type: ignore[arg-type]
        kind = type(node)
        if kind is cst.Attribute and type(node.value) is cst.Name and node.value.value == name.value:
            return True
        if kind is cst.Subscript and type(node.value) is cst.Name and node.value.value == name.value:
            return True
        if kind is cst.AugAssign and type(node.target) is cst.Name and node.target.value == name.value:
            return True
    return False


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
    the class assigns from `tf.Variable`/`add_weight` (or a Keras layer's `kernel`/`bias`), an
    attribute of a module-level object that holds one (`config.scale` of a class that assigns
    `self.scale = tf.Variable(...)`, a dataclass field, `SimpleNamespace(w=tf.Variable(...))`), a
    Keras layer with weights called inside, or `tf.compat.v1.get_variable`; reads in functions the
    forward runs (a `tf.cond` branch, a local helper) count.

    The other direction too: when the forward certainly reads no variable (it names only its own
    values, TensorFlow, NumPy, builtins and module constants), flags a grad whose `variables` has no
    default, or a default other than `None` or an empty tuple or list.

    ## Why is this bad?
    TensorFlow watches the variables the forward reads and calls `grad(*upstream, variables=...)`.
    When grad cannot take that keyword, the forward call itself raises `TypeError: @tf.custom_gradient
    grad_fn must accept keyword argument 'variables', since function uses variables: [...]`, eagerly
    and under `tf.function` (in a Keras layer, at the first call). When the forward reads none, TF
    calls `grad(*upstream)`: a required `variables` raises `TypeError: grad() missing 1 required
    positional argument: 'variables'` when the gradient is taken, and a default list of variables
    makes grad return variable gradients that TF counts as extra input gradients.

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
    objects other than `self` and module-level (or enclosing) objects built in the file are not seen.
    `trainable=` set to a non-literal value is treated as non-trainable.
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
        """
import tensorflow as tf

@tf.custom_gradient
def identity_op(x):
    def grad(dy, variables=()):  # an empty default: nothing extra is returned when TF passes none
        return dy, [tf.zeros_like(v) for v in variables]
    return tf.identity(x), grad

# tf: grad(identity_op, [1.0, 2.0]) => both ok
""",
        """
import types
import tensorflow as tf

settings = types.SimpleNamespace(scale=3.0)  # a plain number, not a variable

@tf.custom_gradient
def scaled(x):
    return x * settings.scale, lambda dy: dy * settings.scale

# tf: grad(scaled, [1.0, 2.0]) => both ok
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
        """
import tensorflow as tf

@tf.custom_gradient
def identity_op(x):
    def grad(dy, variables):  # expect: CG004
        return dy
    return tf.identity(x), grad

# tf: grad(identity_op, [1.0, 2.0]) => both raises missing 1 required positional argument: 'variables'
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def doubled(x):
    def grad(dy, variables=[w]):  # expect: CG004
        return dy * 2.0, [tf.reduce_sum(dy * x) for _ in variables]
    return x * 2.0, grad

# tf: grad(doubled, [1.0, 2.0]) => eager raises return 1 gradients, but returned 2; graph raises too few gradients
""",
        """
import dataclasses
import tensorflow as tf

@dataclasses.dataclass
class Params:
    gain: tf.Variable

params = Params(gain=tf.Variable(2.0))  # a module-level object holding a variable

@tf.custom_gradient
def amplified(x):
    def grad(dy):  # expect: CG004
        return dy * 2.0
    return x * params.gain, grad

# tf: grad(amplified, [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
        """
import tensorflow as tf

class Config:
    def __init__(self):
        self.scale = tf.Variable(3.0)

config = Config()

@tf.custom_gradient
def scaled(x):
    y = tf.cond(tf.reduce_all(x > 0), lambda: x * config.scale, lambda: x)  # the branch runs in the forward
    def grad(dy):  # expect: CG004
        return dy
    return y, grad

# tf: grad(scaled, [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            if not record.variable_reads:
                yield from self._without_variables(ctx, record)
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


    def _without_variables(self, ctx: LintContext, record: CustomGradient) -> Iterator[Finding]:
        """A forward that certainly reads no variable: TF calls grad(*upstreams) alone, so a
        required ``variables`` is missing and a default other than None is what grad sees."""
        grads = [g for g in record.grads if g.declares_variables and not g.is_custom_gradient]
        if not grads or not reads_no_variable(ctx.index, record):
            return
        for grad in grads:
            sig = grad.signature
            param = next(p for p in sig.positional + sig.kwonly if p.name == "variables")
            default = param.node.default
            if default is None:
                kind = "keyword-only" if param in sig.kwonly else "positional"
                message = (
                    f"grad of '{record.name}' requires 'variables' but '{record.name}' reads no variable: TF then "
                    f"calls grad without it, and taking the gradient raises TypeError: grad() missing 1 required "
                    f"{kind} argument: 'variables' (eagerly and under tf.function); give it a default "
                    f"(variables=None)")
            elif not _empty_default(default):
                message = (
                    f"grad of '{record.name}' defaults 'variables' to {describe(default)} but '{record.name}' "
                    f"reads no variable: TF calls grad without 'variables', so grad works on the default and its "
                    f"variable gradients count as extra input gradients (ValueError eagerly, InternalError under "
                    f"tf.function, when the gradient is taken); use variables=None")
            else:
                continue
            yield self.finding(ctx, grad.line, grad.column, message, record.qualname)


def _empty_default(expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.Name:
        return expr.value == "None"
    return type(expr) in (cst.Tuple, cst.List) and not expr.elements  # type: ignore[union-attr]


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
    gradients, and that the variable gradients are not `None` and not a literal list shorter than the
    variables the forward reads (`[]`, or `[dw]` for `w` and `b`). A branch that runs only without
    variables (`if variables is None:`) never runs here and is not checked.

    ## Why is this bad?
    TF runs `input_grads, variable_grads = grad_fn(*upstream, variables=variables)`. Returning only
    the input gradients fails with `ValueError: too many values to unpack (expected 2)` eagerly, and
    with `OperatorNotAllowedInGraphError: Iterating over a symbolic tf.Tensor` under `tf.function`
    (or a "returned too few gradients" `InternalError` when the gradient has two rows). None of these
    messages mention variables. `None` as the variable gradients raises `TypeError: object of type
    'NoneType' has no len()`, and too few `ValueError: Must return gradient for each variable from
    @custom_gradient grad_fn`, eagerly and under `tf.function`.

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
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scaled(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        if variables is None:
            return dy, None  # never runs: the forward reads w, so TF always passes variables
        return dy * w_value, [tf.reduce_sum(dy * x) for _ in variables]
    return x * w_value, grad

# tf: var_grads(scaled, [1.0, 2.0], [w]) => both ok [3.0]
""",
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")
b = tf.Variable(1.0, name="b")

@tf.custom_gradient
def affine(x):
    w_value, b_value = tf.convert_to_tensor(w), tf.convert_to_tensor(b)
    def grad(dy, variables=None):
        var_grads = []
        for v in variables:  # filled at run time, matched by identity
            var_grads.append(tf.reduce_sum(dy * x) if v is w else tf.reduce_sum(dy))
        return dy * w_value, var_grads
    return x * w_value + b_value, grad

# tf: var_grads(affine, [1.0, 2.0], [w, b]) => both ok [3.0, 2.0]
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
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scaled(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        return dy * w_value, None  # expect: CG005
    return x * w_value, grad

# tf: grad(scaled, [1.0, 2.0]) => both raises object of type 'NoneType' has no len()
""",
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")
b = tf.Variable(1.0, name="b")

@tf.custom_gradient
def affine(x):
    w_value, b_value = tf.convert_to_tensor(w), tf.convert_to_tensor(b)
    def grad(dy, variables=None):
        return dy * w_value, [tf.reduce_sum(dy * x)]  # expect: CG005
    return x * w_value + b_value, grad

# tf: grad(affine, [1.0, 2.0]) => both raises Must return gradient for each variable
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scaled(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, variables=None):
        return dy * w_value, []  # expect: CG005
    return x * w_value, grad

# tf: grad(scaled, [1.0, 2.0]) => both raises Must return gradient for each variable
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors: Tensors | None = None
            for grad in _pair_grads(record):
                for site in grad.returns:
                    if variables_branch(ctx.index, grad, site.anchor) == ABSENT:
                        continue  # never runs: the forward reads variables, so TF passes them
                    value = _literal(site.value, ctx)
                    elements = _elements(value)
                    if site.value is None:
                        what = "nothing"
                    elif elements is not None:
                        if len(elements) == 2:
                            problem = self._variable_grads(ctx, record, elements[1])
                            if problem:
                                line, column = _line(ctx, site.anchor)
                                yield self.finding(ctx, line, column, problem, record.qualname)
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


    @staticmethod
    def _variable_grads(ctx: LintContext, record: CustomGradient, expr: cst.BaseExpression) -> str | None:
        """The variable gradients of a pair: None, or a list shorter than the variables read."""
        reads = record.variable_reads
        if type(expr) is cst.Name and _mutated(ctx, expr):
            return None  # `gv = []` filled by `gv.append(...)`: its length is known only at run time
        value = _literal(expr, ctx)
        if type(value) is cst.Name and value.value == "None":
            return (f"grad of '{record.name}' returns None as its variable gradients but '{record.name}' reads "
                    f"{plural(len(reads), 'variable')} ({_listing(reads, 2)}): when the gradient is taken, eagerly "
                    f"and under tf.function, TF raises TypeError: object of type 'NoneType' has no len(); return a "
                    f"list with one gradient (or None) per variable in variables")
        entries = _elements(value) if type(value) is cst.List else None
        if entries is None or len(entries) >= len(reads):
            return None
        # each read is at least one variable (a layer holds several): a shorter list is too short
        got = "an empty list" if not entries else f"{plural(len(entries), 'variable gradient')}"
        return (f"grad of '{record.name}' returns {got} but '{record.name}' reads "
                f"{plural(len(reads), 'variable')} ({_listing(reads, 2)}): when the gradient is taken, eagerly and "
                f"under tf.function, TF raises ValueError: Must return gradient for each variable from "
                f"@custom_gradient grad_fn; return one gradient per v in variables")


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
    `self.<attr>` weights, variables held by module-level objects, Keras layers with weights) in the
    body of a gradient function and the functions it runs.

    **Opinionated.** TF's own documentation reads a captured variable in grad, and the read works
    unless the call sits inside `tf.cond`/`tf.switch_case`/`tf.while_loop` under `tf.function`. So,
    like flake8-bugbear's B9 group, the rule reports only that certain case by default: when the
    same file calls the function inside such control flow in a `tf.function`. Select it by its code
    to get every read: `cg-lint --extend-select CG018` (or `extend-select = ["CG018"]` in
    `[tool.cg_lint]`, `--select ALL`, or `flake8 --extend-select CG018`); a prefix such as `CG0`
    does not.

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

    For a Keras layer called in grad (a recompute block), converting the layer is no fix: compute
    what grad needs from the layer in the forward (its output, or its vector-Jacobian product with a
    `tf.GradientTape` there), or make sure the call never runs inside `tf.cond` under `tf.function`.

    ## Known limitations
    Reads through the `variables` argument, helper functions or containers are not flagged. Only
    calls in the same file show the tf.cond-under-tf.function case.

    ## Eager-only code
    Silent where graph mode cannot happen (see CG009): `Tensor.graph` and autocast need it.
    """

    code = CG018
    opinionated = True
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
        """
import numpy as np
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def _scaled(x):
    def grad(dy, variables=None):
        return dy * w, [tf.reduce_sum(dy * x) for _ in variables]  # only ever eager: tf.py_function
    return x * w, grad

def scaled(x):
    return tf.py_function(_scaled, [x], tf.float32)

# tf: in_cond(scaled, [1.0, 2.0]) => both ok
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
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scaled(x):
    def grad(dy, variables=None):
        return dy * w, [tf.reduce_sum(dy * x) for _ in variables]  # expect: CG018
    return x * w, grad

@tf.function
def step(x, use_scale):
    # the call inside tf.cond under tf.function: reported with the default selection too
    return tf.cond(use_scale, lambda: scaled(x), lambda: x)

# tf: in_cond(scaled, [1.0, 2.0]) => eager ok; graph raises Tensor.graph is undefined
""",
        """
import keras
import tensorflow as tf

class Recompute(keras.layers.Layer):
    def build(self, shape):
        self.dense = keras.layers.Dense(2)
        self.dense.build(shape)

    def call(self, x):
        @tf.custom_gradient
        def f(x):
            y = self.dense(x)
            def grad(dy, variables=None):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    out = self.dense(x)  # expect: CG018
                dx, *dvars = tape.gradient(out, [x, *variables], output_gradients=dy)
                return dx, dvars
            return y, grad
        return f(x)

layer = Recompute()
layer.build((1, 2))

# tf: in_cond(layer, [[1.0, 2.0]]) => eager ok; graph raises Tensor.graph is undefined
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            context = context_of(ctx.index, record)
            if context.eager_only:
                continue  # Tensor.graph and autocast need graph mode
            certain = context.control_flow_call
            if certain is None and not self.explicit:
                continue  # an opinion: reported when CG018 is selected by its code
            for grad in record.grads:
                if asserts_eager(ctx.index, grad.node):
                    continue
                by_statement: dict[int, list[VariableRead]] = {}
                for read in grad.variable_reads:
                    by_statement.setdefault(id(statement_of(ctx.index, read.anchor)), []).append(read)
                for reads in by_statement.values():
                    first = reads[0]
                    names = ", ".join(r.text for r in reads)
                    noun = "variable" if len(reads) == 1 else "variables"
                    line, column = _line(ctx, first.anchor)
                    if certain is not None:
                        why = (f"'{record.name}' is called inside tf.cond/tf.switch_case/tf.while_loop under "
                               f"tf.function (line {certain.line}), where this raises AttributeError: Tensor.graph is "
                               f"undefined when the gradient is taken")
                    else:
                        why = ("under tf.function, when the call is inside tf.cond, this raises AttributeError: "
                               "Tensor.graph is undefined, and under Keras mixed precision it reads float32")
                    if first.kind == "layer":
                        verb, advice = "calls the Keras layer", (
                            f"compute what grad needs from {first.text} in the forward (its output, or its "
                            f"vector-Jacobian product with a tf.GradientTape there) and use that in grad")
                        names = first.text
                    else:
                        verb, advice = f"reads {noun}", (
                            f"read it once in the forward ({_value_name(first)} = "
                            f"tf.convert_to_tensor({first.text})) and use that in grad")
                    yield self.finding(ctx, line, column, f"grad of '{record.name}' {verb} {names}: {why}; {advice}",
                                       record.qualname)


def _value_name(read: VariableRead) -> str:
    base = read.text.rsplit(".", 1)[-1].split("[", 1)[0]
    return f"{base}_value"
