"""CG015 static-batch-dimension: x.shape[0] used as a number in a Keras layer's custom gradient."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import body_nodes
from cg_lint.codes import CG015
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient
from cg_lint.rules.base import LintContext, Rule
from cg_lint.rules.graph_mode.graph_mode_shared import Reporter, graph_bodies

# Keras traces these methods with the batch dimension unknown (a functional model's Input, fit)
_KERAS_METHODS = frozenset({"call", "train_step", "test_step", "predict_step"})
# TF ops whose shape argument must be numbers (or a tensor): a None inside fails
_SHAPE_ARGS = {"reshape": 1, "zeros": 0, "ones": 0, "fill": 0, "broadcast_to": 1, "tile": 1}


class StaticBatchDimension(Rule):
    """`x.shape[0]` used as a number inside a Keras layer's custom gradient.

    ## What it does
    Flags `v.shape[0]` (also `v.shape.as_list()[0]`, `v.get_shape()[0]`) of an input or upstream
    of a custom gradient defined in a Keras layer's or model's `call` (or `train_step`...) when it
    is used as a number: in a shape list for `tf.reshape`/`tf.zeros`/`tf.ones`/`tf.fill`/
    `tf.broadcast_to`/`tf.tile`, in `range()` or `int()`, or in arithmetic, directly or through a
    name it is assigned to (`rows = v.shape[0]`) and not rebound.

    ## Why is this bad?
    Keras calls `call` on symbolic tensors whose batch dimension is unknown: when a functional or
    `Sequential` model is built from `keras.Input`, and when `fit`/`evaluate`/`predict` trace it.
    There `v.shape[0]` is `None`, and `tf.reshape(v, [None, -1])` raises `TypeError: Failed to
    convert elements of [None, -1] to Tensor` (arithmetic and `range` raise `TypeError` too). Called
    eagerly on a concrete batch it works, so a unit test does not show it.

    ## Example
    ```python
    class Flatten2(keras.layers.Layer):
        def call(self, x):
            @tf.custom_gradient
            def flat(v):
                return tf.reshape(v, [v.shape[0], -1]), lambda dy: tf.reshape(dy, tf.shape(v))
            return flat(x)
    ```

    ## Use instead
    ```python
    class Flatten2(keras.layers.Layer):
        def call(self, x):
            @tf.custom_gradient
            def flat(v):
                return tf.reshape(v, [tf.shape(v)[0], -1]), lambda dy: tf.reshape(dy, tf.shape(v))
            return flat(x)
    ```

    ## Fix safety
    No automatic fix: `tf.shape(v)[0]` is a tensor, which the surrounding code may not expect.
    """

    code = CG015
    VALID = (
        """
import keras
import tensorflow as tf

class Flatten2(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def flat(v):
            rows = tf.shape(v)[0]  # a tensor: known when the graph runs
            return tf.reshape(v, [rows, -1]), lambda dy: tf.reshape(dy, tf.shape(v))
        return flat(x)

model = keras.Sequential([keras.Input((2, 3)), Flatten2()])

def use(x):
    return model(x)

# tf: grad(use, [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def flat(v):  # not in a Keras layer: the caller decides the shapes
    return tf.reshape(v, [v.shape[0], -1]), lambda dy: tf.reshape(dy, tf.shape(v))
""",
        """
import keras
import tensorflow as tf

class Rows(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def rowwise(v):
            rows = v.shape.as_list()[0]
            if rows is None:  # rebound when unknown: a tensor from then on
                rows = tf.shape(v)[0]
            width = v.get_shape().as_list()[1]  # not the batch dimension
            return tf.reshape(v, [rows, width]), lambda dy: tf.reshape(dy, tf.shape(v))
        return rowwise(x)

model = keras.Sequential([keras.Input((3,)), Rows()])

def use(x):
    return model(x)

# tf: grad(use, [[1.0, 2.0, 3.0]]) => both ok
""",
    )
    INVALID = (
        """
import keras
import tensorflow as tf

class Flatten2(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def flat(v):
            return tf.reshape(v, [v.shape[0], -1]), lambda dy: tf.reshape(dy, tf.shape(v))  # expect: CG015
        return flat(x)

def build():
    return keras.Sequential([keras.Input((2, 3)), Flatten2()])

# tf: call(build) => both raises Failed to convert elements of [None, -1] to Tensor
""",
        """
import keras
import tensorflow as tf

class SelectRows(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def select(v):
            def grad(dy):
                rows = dy.shape.as_list()[0]  # expect: CG015
                return tf.ones([rows, 3]) * dy
            return v * 1.0, grad
        return select(x)

def train():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3), SelectRows()])
    model.compile(loss="mse", optimizer="sgd")
    return model.fit(tf.ones((2, 3)), tf.ones((2, 3)), verbose=0).history["loss"]

# tf: call(train) => eager raises Expected int32, but got None
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            method = _keras_method(ctx, record)
            if method is None:
                continue
            names = set(record.inputs) | {p.name for g in record.grads for p in g.upstream}
            report = Reporter(self, ctx, record)
            for func, who in graph_bodies(ctx, record):
                for node in body_nodes(func, ctx.index):
                    use = _batch_dim(node, names)
                    if use is None or not _used_as_number(ctx, node):
                        continue
                    finding = report(node, (
                        f"{who} uses {use}.shape[0] as a number: {use}'s batch dimension is None when Keras "
                        f"builds or traces {method} (a model built from keras.Input, fit, predict), and this "
                        f"raises TypeError under tf.function; use tf.shape({use})[0]"))
                    if finding:
                        yield finding


def _keras_method(ctx: LintContext, record: CustomGradient) -> str | None:
    """'Cls.call' when the definition is nested in a Keras layer's or model's traced method."""
    func = ctx.index.enclosing(record.node, (cst.FunctionDef,))
    while func is not None:
        cls = ctx.index.parent(ctx.index.parent(func))
        if type(cls) is cst.ClassDef and func.name.value in _KERAS_METHODS:  # type: ignore[union-attr]
            bases = {n for b in cls.bases for n in ctx.index.qualnames(b.value)}
            if any(n.startswith(("keras.", "tensorflow.keras.", "tf_keras.")) for n in bases):
                return f"{cls.name.value}.{func.name.value}"  # type: ignore[union-attr]
        func = ctx.index.enclosing(func, (cst.FunctionDef,))
    return None


def _batch_dim(node: cst.CSTNode, names: set[str]) -> str | None:
    """``v.shape[0]`` (or ``v.shape.as_list()[0]``, ``v.get_shape()[0]``) for a name in ``names``: that name."""
    if type(node) is not cst.Subscript or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if type(index) is not cst.Index or type(index.value) is not cst.Integer or index.value.value != "0":
        return None
    shape = node.value
    if type(shape) is cst.Call and not shape.args and type(shape.func) is cst.Attribute \
            and shape.func.attr.value == "as_list":
        shape = shape.func.value  # `.as_list()` keeps the None
    if type(shape) is cst.Call and not shape.args and type(shape.func) is cst.Attribute \
            and shape.func.attr.value == "get_shape":
        owner = shape.func.value
    elif type(shape) is cst.Attribute and shape.attr.value == "shape":
        owner = shape.value
    else:
        return None
    return owner.value if type(owner) is cst.Name and owner.value in names else None


def _used_as_number(ctx: LintContext, node: cst.CSTNode, follow: bool = True) -> bool:
    parent = ctx.index.parent(node)
    if follow and type(parent) is cst.Assign and parent.value is node:
        return any(_used_as_number(ctx, use, follow=False) for use in _uses_of_sole_binding(ctx, parent))
    if type(parent) is cst.BinaryOperation:
        return True
    if type(parent) is cst.Element:
        literal = ctx.index.parent(parent)
        arg = ctx.index.parent(literal) if type(literal) in (cst.List, cst.Tuple) else None
        call = ctx.index.parent(arg) if type(arg) is cst.Arg else None
        if type(call) is cst.Call:
            name = (call_name(call, ctx.index.qualnames) or "").rsplit(".", 1)[-1]
            position = _SHAPE_ARGS.get(name)
            return position is not None and call.args.index(arg) == position  # type: ignore[arg-type]
        return False
    if type(parent) is cst.Arg:
        call = ctx.index.parent(parent)
        return type(call) is cst.Call and call_name(call, ctx.index.qualnames) in ("range", "int")
    return False


def _uses_of_sole_binding(ctx: LintContext, assign: cst.Assign) -> list[cst.Name]:
    """The reads of ``rows`` after ``rows = v.shape[0]`` in the function around it (and the
    functions nested there), when that assignment is the name's only binding in the function: a
    name rebound (``if rows is None: rows = tf.shape(v)[0]``) may no longer hold the None."""
    if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return []
    target = assign.targets[0].target
    func = ctx.index.enclosing(assign, (cst.FunctionDef, cst.Lambda))
    if func is None or len(ctx.index.env_for(func).bindings.get(target.value, ())) != 1:
        return []
    uses, stack = [], list(ctx.index.walk.children(func))
    while stack:
        node = stack.pop()
        if type(node) is cst.Name and node.value == target.value and node is not target \
                and not _shadowed(ctx, node, func):
            uses.append(node)
        stack.extend(ctx.index.walk.children(node))
    return uses


def _shadowed(ctx: LintContext, name: cst.Name, outer: cst.CSTNode) -> bool:
    """A function between ``name`` and ``outer`` binds the name itself."""
    owner = ctx.index.owner(name)
    while owner is not None and owner is not outer:
        env = ctx.index.env_for(owner)
        if name.value in env.params or name.value in env.bindings:
            return True
        owner = ctx.index.owner(owner)
    return False
