"""CG005 variables-return-not-pair: grad takes variables but does not return (input_grads, variable_grads)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.counting import ABSENT, variables_branch
from cg_lint.analyses.tensors import Tensors
from cg_lint.codes import CG005
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.rules.variables.variables_shared import (
    listing,
    literal_elements,
    pair_grads,
    resolved_literal,
    statement_position,
)


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
import keras
import tensorflow as tf

class Affine(keras.layers.Layer):
    def __init__(self, use_bias=True):
        super().__init__()
        self.use_bias = use_bias

    def build(self, shape):
        self.w = self.add_weight(shape=(), initializer="ones")
        if self.use_bias:
            self.b = self.add_weight(shape=(), initializer="zeros")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            y = v * self.w
            if self.use_bias:
                y = y + self.b
            def grad(dy, variables=None):
                return dy * self.w, [tf.reduce_sum(dy * v), tf.reduce_sum(dy)]  # expect: CG005
            return y, grad
        return f(x)

layer = Affine(use_bias=False)

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both raises Must return gradient for each variable
""",
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
            for grad in pair_grads(record):
                for site in grad.returns:
                    if variables_branch(ctx.index, grad, site.anchor) == ABSENT:
                        continue  # never runs: the forward reads variables, so TF passes them
                    value = resolved_literal(site.value, ctx)
                    elements = literal_elements(value)
                    if site.value is None:
                        what = "nothing"
                    elif elements is not None:
                        if len(elements) == 2:
                            problem = self._variable_grads(ctx, record, elements[1])
                            if problem:
                                line, column = statement_position(ctx, site.anchor)
                                yield self.finding(ctx, line, column, problem, record.qualname)
                            continue
                        what = plural(len(elements), "value")
                    else:
                        tensors = tensors or Tensors(ctx.index, record)
                        if not tensors.is_tensor(site.value):
                            continue
                        what = f"a single tensor ({describe(site.value)})"
                    line, column = statement_position(ctx, site.anchor)
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' returns {what} but '{record.name}' reads variables "
                        f"({listing(record.variable_reads, 2)}): TF unpacks (input_grads, variable_grads) and fails "
                        f"eagerly and under tf.function with errors that do not mention variables; return "
                        f"(input_grads, [one gradient per variable in variables])"), record.qualname)


    @staticmethod
    def _variable_grads(ctx: LintContext, record: CustomGradient, expr: cst.BaseExpression) -> str | None:
        """The variable gradients of a pair: None, or a list shorter than the variables read."""
        reads = record.variable_reads
        if type(expr) is cst.Name and _mutated(ctx, expr):
            return None  # `gv = []` filled by `gv.append(...)`: its length is known only at run time
        value = resolved_literal(expr, ctx)
        if type(value) is cst.Name and value.value == "None":
            return (f"grad of '{record.name}' returns None as its variable gradients but '{record.name}' reads "
                    f"{plural(len(reads), 'variable')} ({listing(reads, 2)}): when the gradient is taken, eagerly "
                    f"and under tf.function, TF raises TypeError: object of type 'NoneType' has no len(); return a "
                    f"list with one gradient (or None) per variable in variables")
        entries = literal_elements(value) if type(value) is cst.List else None
        if entries is None:
            return None
        if len(entries) >= len(reads):
            return _flag_guarded(ctx, record, len(entries))
        # each read is at least one variable (a layer holds several): a shorter list is too short
        got = "an empty list" if not entries else f"{plural(len(entries), 'variable gradient')}"
        return (f"grad of '{record.name}' returns {got} but '{record.name}' reads "
                f"{plural(len(reads), 'variable')} ({listing(reads, 2)}): when the gradient is taken, eagerly and "
                f"under tf.function, TF raises ValueError: Must return gradient for each variable from "
                f"@custom_gradient grad_fn; return one gradient per v in variables")


def _flag_guarded(ctx: LintContext, record: CustomGradient, listed: int) -> str | None:
    """A fixed number of variable gradients while the forward reads some variable only under a
    Python flag (``if self.use_bias:``): with the flag off TF passes fewer variables."""
    if listed != len(record.variable_reads):
        return None
    for read in record.variable_reads:
        test = _python_flag(ctx, read.anchor, record.node)
        if test is not None:
            return (f"grad of '{record.name}' always returns {plural(listed, 'variable gradient')}, but "
                    f"'{record.name}' reads {read.text} only when {test}: with it false TF passes "
                    f"{plural(listed - 1, 'variable')} and raises ValueError: Must return gradient for each "
                    f"variable, eagerly and under tf.function; build the list from variables "
                    f"([grads[v.ref()] for v in variables])")
    return None


def _python_flag(ctx: LintContext, node: cst.CSTNode, forward: cst.CSTNode) -> str | None:
    """The test of an ``if`` around ``node`` (inside the forward) that reads configuration:
    ``self.use_bias``, a name, not a tensor comparison."""
    parent = ctx.index.parent(node)
    while parent is not None and parent is not forward:
        if type(parent) is cst.If and type(parent.test) in (cst.Attribute, cst.Name):
            return describe(parent.test)
        parent = ctx.index.parent(parent)
    return None
