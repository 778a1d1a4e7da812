# ruff: noqa
# flake8: noqa
"""Custom-gradient ops in the styles real code uses (some with deliberate defects).

Not imported by anything: tests lint this text.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf
from tensorflow import custom_gradient as cg
from tensorflow.python.ops import custom_gradient

EPSILON = 1e-6
_SCALES = (1.0, 2.0)


def _softplus_grad(x, dy):
    return dy * tf.sigmoid(x)


@tf.custom_gradient
def log1pexp(x):
    """Numerically stable log(1 + exp(x))."""
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


@cg
def clip_gradient(x, low=-1.0, high=1.0):
    def grad(dy):
        return tf.clip_by_value(dy, low, high)  # defect: three inputs, one gradient

    return tf.identity(x), grad


@custom_gradient.custom_gradient
def scaled(x, w):
    y = x * w * EPSILON

    def grad(dy):
        return dy * w, dy * x

    return y, grad


def _mean_var_fwd(x):
    mean = tf.reduce_mean(x)
    var = tf.math.reduce_variance(x)

    def grad(dmean, dvar):
        return dmean / tf.cast(tf.size(x), x.dtype) + dvar * 2.0 * (x - mean)

    return (mean, var), grad


mean_var = tf.custom_gradient(_mean_var_fwd)
swap = tf.custom_gradient(lambda x: (x, lambda dy: -dy))


def _shared_grad(dy):
    return dy * 0.5


@tf.compat.v1.custom_gradient
def halve(x):
    return x / 2.0, _shared_grad


@tf.custom_gradient
def broken_pair(x, y):
    z = x + y

    def grad(dz, dw):  # defect: one output, two upstream parameters
        return dz, dz

    return z, grad


@tf.custom_gradient
def three_values(x):
    def grad(dy):
        return dy

    return x, x * 2.0, grad  # defect: not a pair


def model_step(batch):
    a = log1pexp(batch)
    b = clip_gradient(a, -0.5, 0.5)
    c = scaled(b, _SCALES[0])
    m, v = mean_var(c)
    partial_scaled = functools.partial(scaled, w=3.0)
    return partial_scaled(m) + v + halve(c) + swap(c) + broken_pair(a, b)


class Normalizer:
    def __init__(self, scale=1.0):
        self.scale = tf.Variable(scale)
        self.count = 0

    @tf.custom_gradient
    def __call__(self, x):
        y = x * self.scale

        def grad(dy, variables=None):
            return dy * self.scale, [tf.reduce_sum(dy * x)]

        return y, grad

    @staticmethod
    @tf.custom_gradient
    def identity(x):
        return x, lambda dy: dy

    def apply(self, x):
        self.count += 1
        return self(x) + self.identity(x)


def numpy_helper(values):
    return np.asarray(values) * 2
