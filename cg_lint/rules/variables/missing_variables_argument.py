"""CG004 missing-variables-argument: forward reads variables but grad does not accept 'variables'."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.counting import PRESENT, variables_branch
from cg_lint.analyses.variable_reads import keras3_weight_inputs, reads_no_variable
from cg_lint.codes import CG004
from cg_lint.findings import Finding, Fix
from cg_lint.model.records import CustomGradient, GradFn
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.rules.edits import insert_after
from cg_lint.rules.variables.variables_shared import listing, literal_elements, resolved_literal


class MissingVariablesArgument(Rule):
    """Forward reads trainable variables but grad accepts neither `variables` nor `**kwargs`.

    ## What it does
    Flags a gradient function without a `variables` parameter (or `**kwargs`) when its forward reads a
    trainable variable: a module-level or enclosing `tf.Variable`, one created inside, a `self.<attr>`
    the class assigns from `tf.Variable`/`add_weight` (or a Keras layer's `kernel`/`bias`), an
    attribute of a module-level object that holds one (`config.scale` of a class that assigns
    `self.scale = tf.Variable(...)`, a dataclass field, `SimpleNamespace(w=tf.Variable(...))`), a
    Keras layer with weights called inside, or `tf.compat.v1.get_variable`; reads in functions the
    forward runs (a `tf.cond` branch, a local helper) count, as do a dict of variables on `self`
    (`self.ws["a"]`) and `self.trainable_variables` (or `trainable_weights`, `weights`, `variables`)
    of a class with weights, iterated or handed to a TF op.

    A Keras 3 weight (`self.add_weight` in a `keras.layers.Layer`) passed in as an input and read
    in the forward is flagged too: it is no `tf.Variable`, so eagerly TF watches the `tf.Variable`
    behind it, which is not the input, and raises the same `TypeError`; under `tf.function` the
    input is converted to a tensor first and it works. Pass `tf.convert_to_tensor(self.kernel)`.
    Reads count in the functions the forward runs: a `tf.cond` branch, a local helper, the file's
    module-level functions it calls (two calls deep), a `keras.Sequential` listing a weighted
    layer, and a variable a module-level function makes and returns.

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
    Or pass the variable in as an input (`scale(x, w)`): TF then treats it like any input (a Keras 3
    weight as `tf.convert_to_tensor(self.kernel)`).

    ## Fix safety
    Safe, and offered only when every `return` of grad already is `(input_grads, [variable_grads])`:
    then adding `variables=None` to grad's signature is the whole defect. Otherwise grad must also
    return the variables' gradients, which has to be written by hand.

    ## Known limitations
    Variables read through helper functions of other modules, containers other than literal lists,
    or attributes of objects other than `self` and module-level (or enclosing) objects built in the
    file are not seen.
    `trainable=` set to a non-literal value is treated as non-trainable.
    """

    code = CG004
    fixable = True
    VALID = (
        """
import tensorflow as tf

w = tf.Variable(3.0)  # a module variable named like the attribute below

class Scale(tf.Module):
    def __init__(self):
        self.w = 2.0  # a plain number: reading self.w reads no variable

    def __call__(self, x):
        @tf.custom_gradient
        def f(v):
            return v * self.w, lambda dy: dy * self.w
        return f(x)

# tf: grad(Scale(), [1.0, 2.0]) => both ok
""",
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
        """
import keras
import tensorflow as tf

counter = tf.Variable(0.0, trainable=False)  # not watched by TF

def _offset(v):
    return v + counter

def _shifted(v):
    return _offset(v) * 2.0

class Scale(keras.layers.Layer):
    def build(self, shape):
        self.k = self.add_weight(shape=(), initializer="ones")
        self.act = keras.Sequential([keras.layers.ReLU(), keras.layers.Dropout(0.1)])  # no weights

    def call(self, x):
        @tf.custom_gradient
        def f(v, k):
            y = self.act(_shifted(v)) * k
            return y, lambda dy: (dy * 2.0 * k, tf.reduce_sum(dy * y))
        return f(x, tf.convert_to_tensor(self.k))  # a tensor, not the Keras variable

layer = Scale()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both ok [2.0, 2.0]
""",
        """
import keras
import tensorflow as tf

class Scale(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.k = tf.Variable(1.0)  # a tf.Variable stays one on a Keras 3 layer: TF matches it to the input

    def call(self, x):
        @tf.custom_gradient
        def f(v, k):
            return v * k, lambda dy: (dy * k, tf.reduce_sum(dy * v))
        return f(x, self.k)

layer = Scale()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both ok [1.0, 1.0]
""",
        """
import keras
import tensorflow as tf

class Named(keras.layers.Layer):
    def build(self, shape):
        self.a = self.add_weight(shape=(), initializer="ones")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            names = [w.name for w in self.trainable_variables]  # names and a count read no value
            scale = float(len(self.trainable_variables) + len(names))
            return v * scale, lambda dy: dy * scale
        return f(x)

layer = Named()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both ok [2.0, 2.0]
""",
    )
    INVALID = (
        """
import keras
import tensorflow as tf

class Lookup(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.table = keras.layers.Embedding(4, 2)

    def build(self, shape):
        self.table.build(shape)

    def call(self, ids):
        @tf.custom_gradient
        def look(i):
            def grad(dy):  # expect: CG004
                return None
            return tf.gather(self.table.embeddings, i), grad  # a sublayer's weight is a variable read
        return look(ids)

layer = Lookup()

def use(ids):
    return layer(ids)

# tf: call(use, [0, 1]) => both raises must accept keyword argument 'variables'
""",
        """
import keras
import tensorflow as tf

class Product(keras.layers.Layer):
    def build(self, shape):
        self.factors = [self.add_weight(shape=(), initializer="ones") for _ in range(2)]

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            def grad(dy):  # expect: CG004
                return dy * self.factors[0] * self.factors[1]
            return v * self.factors[0] * self.factors[1], grad
        return f(x)

layer = Product()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
        """
import tensorflow as tf

@tf.custom_gradient
def doubled(x):
    def grad(dy, variables=None):  # expect: CG004
        return dy * 2.0, [tf.zeros_like(v) for v in variables]
    return x * 2.0, grad

# tf: grad(doubled, [1.0, 2.0]) => both raises 'NoneType' object is not iterable
""",
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
        """
import keras
import tensorflow as tf

class Scale(keras.layers.Layer):
    def build(self, shape):
        self.k = self.add_weight(shape=(), initializer="ones")

    def call(self, x):
        @tf.custom_gradient
        def f(v, k):
            return v * k, lambda dy: (dy * k, tf.reduce_sum(dy * v))  # expect: CG004
        return f(x, self.k)  # a Keras 3 variable, not a tf.Variable

layer = Scale()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => eager raises must accept keyword argument 'variables'; graph ok [1.0, 1.0]
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

def _scaled(v):
    return v * w  # read two calls below the forward

def _affine(v):
    return _scaled(v) + 1.0

@tf.custom_gradient
def affine(x):
    return _affine(x), lambda dy: dy * 2.0  # expect: CG004

# tf: grad(affine, [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
        """
import keras
import tensorflow as tf

mlp = keras.Sequential([keras.layers.Dense(1), keras.layers.ReLU()])
mlp.build((None, 1))

@tf.custom_gradient
def projected(x):
    return mlp(x), lambda dy: dy  # expect: CG004

# tf: grad(projected, [[1.0]]) => both raises must accept keyword argument 'variables'
""",
        """
import tensorflow as tf

def make_gain():
    gain = tf.Variable(3.0)
    return gain

@tf.custom_gradient
def amplified(x):
    g = make_gain()
    return x * g, lambda dy: dy * 3.0  # expect: CG004

# tf: call(amplified, [1.0, 2.0]) => eager raises must accept keyword argument 'variables'
""",
        """
import keras
import tensorflow as tf

class Mix(keras.layers.Layer):
    def build(self, shape):
        self.a = self.add_weight(shape=(), initializer="ones")
        self.b = self.add_weight(shape=(), initializer="ones")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            y = v
            for w in self.trainable_variables:  # every weight is read
                y = y * w
            return y, lambda dy: dy  # expect: CG004
        return f(x)

layer = Mix()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
        """
import tensorflow as tf

class Table(tf.Module):
    def __init__(self):
        self.ws = {"a": tf.Variable(1.0), "b": tf.Variable(2.0)}  # a dict of variables

    def __call__(self, x):
        @tf.custom_gradient
        def f(v):
            return v * self.ws["b"], lambda dy: dy * 2.0  # expect: CG004
        return f(x)

# tf: grad(Table(), [1.0, 2.0]) => both raises must accept keyword argument 'variables'
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            if not record.variable_reads:
                yield from self._keras3_weights(ctx, record)
                yield from self._without_variables(ctx, record)
                continue
            for grad in record.grads:
                if grad.accepts_variables:
                    continue
                who = "its grad" if grad.name == "<lambda>" else f"its grad '{grad.name}'"
                yield self.finding(ctx, grad.line, grad.column, (
                    f"'{record.name}' reads {plural(len(record.variable_reads), 'trainable variable')} "
                    f"({listing(record.variable_reads)}) but {who} accepts neither 'variables' nor **kwargs: "
                    f"TF raises TypeError at the forward call, eagerly and under tf.function (grad_fn must accept "
                    f"keyword argument 'variables'); add variables=None and return (input_grads, variable_grads)"),
                    record.qualname, _add_variables_fix(ctx, grad))


    def _keras3_weights(self, ctx: LintContext, record: CustomGradient) -> Iterator[Finding]:
        """A Keras 3 weight passed as an input and read in the forward: eagerly TF watches the
        tf.Variable behind it, which is not the input, and wants grad to take ``variables``."""
        passed = keras3_weight_inputs(ctx.index, record)
        if not passed:
            return
        arg, param = passed[0]
        for grad in record.grads:
            if grad.accepts_variables or grad.is_custom_gradient:
                continue
            text = describe(arg.value)
            yield self.finding(ctx, grad.line, grad.column, (
                f"'{record.name}' is passed the Keras 3 weight {text} as its input '{param}' and reads it: a Keras 3 "
                f"variable is not a tf.Variable, so eagerly TF watches the tf.Variable behind it, which is not the "
                f"input, and raises TypeError at the forward call (grad_fn must accept keyword argument "
                f"'variables'); under tf.function it works. Pass tf.convert_to_tensor({text}) instead"),
                record.qualname)

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
            elif _is_none(default) and (use := _iterated(ctx, grad)) is not None:
                message = (
                    f"grad of '{record.name}' iterates 'variables' ({use}) but '{record.name}' reads no "
                    f"variable: TF calls grad without it, 'variables' is None, and taking the gradient raises "
                    f"TypeError: 'NoneType' object is not iterable (eagerly and under tf.function); drop the "
                    f"variable gradients, or guard them with 'if variables:'")
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
        elements = literal_elements(resolved_literal(site.value, ctx))
        if elements is None or len(elements) != 2 or type(elements[1]) is not cst.List:
            return None
    params = grad.node.params
    last = [*params.params, *([params.star_arg] if type(params.star_arg) is cst.Param else []),
            *params.kwonly_params][-1:]
    if not last:
        return None
    end = last[0].default or last[0].annotation or last[0].name
    return Fix("Add 'variables=None' to grad", (insert_after(ctx.index, end, ", variables=None"),), safe=True)


def _is_none(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value == "None"


def _iterated(ctx: LintContext, grad: GradFn) -> str | None:
    """Where grad iterates ``variables`` (a loop, a comprehension, ``len``/``zip``/``list``) outside
    a branch that runs only when TF passes variables."""
    for node in ctx.index.walk.walk(grad.node):
        how = "a loop over it"
        if type(node) in (cst.For, cst.CompFor):
            target = node.iter  # type: ignore[union-attr]
        elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in (
                "len", "zip", "list", "tuple", "enumerate", "sorted"):
            target = next((a.value for a in node.args if type(a.value) is cst.Name
                           and a.value.value == "variables"), None)
            how = f"{node.func.value}(variables)"
        else:
            continue
        if type(target) is cst.Name and target.value == "variables" and variables_branch(
                ctx.index, grad, node) != PRESENT:
            return how
    return None
