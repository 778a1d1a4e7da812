"""CG018 variable-read-in-grad: a tf.Variable is read inside grad."""

from __future__ import annotations

from collections.abc import Iterator

from cg_lint.analyses.contexts import asserts_eager, context_of
from cg_lint.analyses.tensors import statement_of
from cg_lint.codes import CG018
from cg_lint.findings import Finding
from cg_lint.model.records import VariableRead
from cg_lint.rules.base import LintContext, Rule
from cg_lint.rules.variables.variables_shared import statement_position


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
                    line, column = statement_position(ctx, first.anchor)
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
