"""Correct custom gradients in the styles people write them: none of the new rules may fire."""

from __future__ import annotations

import pytest

from cg_lint.engine import lint_source

NEW_RULES = ("CG004", "CG005", "CG006", "CG007", "CG008", "CG009", "CG010", "CG011", "CG012", "CG018")

CORRECT = {
    "gradient reversal with a closure factor": """
import tensorflow as tf

def make_reversal(factor=1.0):
    @tf.custom_gradient
    def reverse(x):
        return tf.identity(x), lambda dy: -factor * dy
    return reverse
""",
    "straight-through estimator": """
import tensorflow as tf

@tf.custom_gradient
def binarize(x):
    def grad(dy):
        return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)
    return tf.sign(x), grad
""",
    "Keras layer: training flag from the enclosing call": """
import keras
import tensorflow as tf

class NoisyGrad(keras.layers.Layer):
    def call(self, inputs, training=None):
        @tf.custom_gradient
        def op(x):
            def grad(dy):
                if training:
                    dy = dy + tf.random.normal(tf.shape(dy), stddev=0.01)
                return dy
            return tf.identity(x), grad
        return op(inputs)
""",
    "static shapes, dtypes and ranks": """
import tensorflow as tf

@tf.custom_gradient
def flatten_last(x):
    shape = x.get_shape().as_list()
    if len(shape) < 2 or shape[-1] is None:
        raise ValueError("need a known last dimension")
    rank = x.shape.rank
    while rank > 2:
        rank -= 1
    n = tf.get_static_value(tf.size(x))
    if n is not None and n > 100:
        pass
    if x.dtype in (tf.float16, tf.bfloat16):
        x = tf.cast(x, tf.float32)
    def grad(dy):
        if dy is None or isinstance(dy, tf.IndexedSlices):
            return dy
        return tf.reshape(dy, tf.shape(x))
    return tf.reshape(x, [-1, shape[-1]]), grad
""",
    "element-wise choices with tf.where and a reduced tf.cond": """
import tensorflow as tf

@tf.custom_gradient
def safe_div(a, b):
    ok = tf.not_equal(b, 0.0)
    y = tf.where(ok, a / tf.where(ok, b, 1.0), 0.0)
    def grad(dy):
        any_bad = tf.reduce_any(tf.logical_not(ok))
        da = tf.cond(any_bad, lambda: tf.where(ok, dy / b, 0.0), lambda: dy / b)
        return da, tf.where(ok, -dy * a / (b * b), 0.0)
    return y, grad
""",
    "eager-only debugging and a guarded conversion": """
import tensorflow as tf

@tf.custom_gradient
def debug_identity(x):
    if tf.executing_eagerly():
        print("value", x.numpy(), float(tf.reduce_mean(x)))
    try:
        n = int(x.shape[0])
    except TypeError:
        n = None
    return tf.identity(x), lambda dy: dy
""",
    "structured and variadic inputs": """
import tensorflow as tf

@tf.custom_gradient
def weighted_sum(xs, w):
    total = tf.add_n([x * w for x in xs])
    def grad(dy):
        return [dy * w for _ in xs], tf.add_n([tf.reduce_sum(dy * x) for x in xs])
    return total, grad

@tf.custom_gradient
def concat_all(*parts):
    sizes = [p.shape[-1] for p in parts]
    def grad(dy):
        return tf.split(dy, sizes, axis=-1)
    return tf.concat(parts, axis=-1), grad
""",
    "variables matched by identity, sorted by name, or by ref": """
import tensorflow as tf

class Affine(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0, name="w")
        self.b = tf.Variable(1.0, name="b")

    def __call__(self, x):
        @tf.custom_gradient
        def f(x):
            w_value = tf.convert_to_tensor(self.w)
            def grad(dy, variables=None):
                by_ref = {self.w.ref(): tf.reduce_sum(dy * x), self.b.ref(): tf.reduce_sum(dy)}
                return dy * w_value, [by_ref[v.ref()] for v in variables]
            return x * w_value + self.b, grad
        return f(x)

scale = tf.Variable(3.0, name="scale")

@tf.custom_gradient
def scaled(x):
    s = tf.identity(scale)
    def grad(dy, variables):
        ordered = sorted(variables, key=lambda v: v.name)
        return dy * s, [tf.reduce_sum(dy * x) for _ in ordered]
    return x * s, grad
""",
    "variables matched with `is`": """
import tensorflow as tf

w = tf.Variable(2.0)
b = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    w_value, b_value = tf.identity(w), tf.identity(b)
    def grad(dy, variables=None):
        return dy * w_value, [tf.reduce_sum(dy * x) if v is w else tf.reduce_sum(dy) for v in variables]
    return x * w_value + b_value, grad
""",
    "grad that accepts **kwargs": """
import tensorflow as tf

w = tf.Variable(1.5)

@tf.custom_gradient
def f(x):
    w_value = tf.convert_to_tensor(w)
    def grad(dy, **kwargs):
        variables = kwargs.get("variables", [])
        return dy * w_value, [tf.reduce_sum(dy * x) for _ in variables]
    return x * w_value, grad
""",
    "variables passed in, non-trainable state, weightless layers": """
import tensorflow as tf

class Layer(tf.keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(shape=(shape[-1], 2))
        self.count = self.add_weight(shape=(), trainable=False, initializer="zeros")
        self.act = tf.keras.layers.Activation("relu")
        self.drop = tf.keras.layers.Dropout(0.1)

    def call(self, x):
        @tf.custom_gradient
        def matmul(x, k):
            y = self.drop(self.act(tf.matmul(x, k))) + self.count
            def grad(dy):
                return tf.matmul(dy, k, transpose_b=True), tf.matmul(x, dy, transpose_a=True)
            return y, grad
        return matmul(x, tf.convert_to_tensor(self.kernel))
""",
    "positional calls and closures instead of keywords": """
import tensorflow as tf

@tf.custom_gradient
def clip_grad(x, limit):
    return tf.identity(x), lambda dy: (tf.clip_by_value(dy, -limit, limit), None)

def apply(x, limit=1.0):
    return clip_grad(x, limit)

y = apply(tf.constant([1.0]), limit=2.0)  # keywords to a plain wrapper are fine
""",
    "nested functions that use static values": """
import tensorflow as tf

def make(depth, clip=True):
    @tf.custom_gradient
    def op(x):
        def body(i, acc):
            return i + 1, acc * 2.0 if clip else acc  # `clip` is a closure value
        def rank_of(t):
            return len(t.shape)  # a Python int
        if rank_of(x) > 1 and x.shape[-1] is not None:
            x = tf.reshape(x, [-1])
        _, y = tf.while_loop(lambda i, acc: i < depth, body, [0, x])
        def grad(dy):
            def scale(g):
                for _ in range(depth):  # a closure int
                    g = g * 2.0
                return g
            return scale(dy)
        return y, grad
    return op
""",
    "helpers that return Python values, and builtins over lists of tensors": """
import tensorflow as tf

def width(t):
    return t.shape[-1]

@tf.custom_gradient
def op(x):
    parts = tf.unstack(x, num=3)
    total = sum(parts)
    biggest = max(width(x), 1)
    if width(x) > 2:
        total = total / biggest
    return total, lambda dy: tf.stack([dy, dy, dy]) / biggest
""",
    "grad that handles calls with and without variables": """
import tensorflow as tf

@tf.custom_gradient
def op(x):
    def grad(dy, variables=None):
        if variables is None:
            return dy
        return dy, [tf.zeros_like(v) for v in variables]
    return tf.identity(x), grad
""",
    "configuration objects without variables": """
import dataclasses
import tensorflow as tf

@dataclasses.dataclass
class Config:
    scale: float = 2.0
    steps: int = 3

CONFIG = Config()

@tf.custom_gradient
def op(x):
    return x * CONFIG.scale, lambda dy: dy * CONFIG.scale
""",
    "a private custom gradient run only through tf.py_function": """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def _numpy_op(x, k):
    v = x.numpy()
    for _ in range(int(k)):
        v = np.tanh(v)
    return v, lambda dy: (dy, None)

def op(x, k):
    return tf.py_function(_numpy_op, [x, k], tf.float32)
""",
}


@pytest.mark.parametrize("source", CORRECT.values(), ids=list(CORRECT))
def test_correct_code_is_quiet(source: str) -> None:
    result = lint_source(source, "example.py")
    assert result.error is None
    assert [f"{f.line}: {f.code} {f.message}" for f in result.findings if f.code in NEW_RULES] == []
