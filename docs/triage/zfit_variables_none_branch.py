"""Repro for docs/triage.md: zfit's normalization_chunked returns two gradients for one input when
TF passes no variables (zfit/core/integration.py, zfit 0.28.0).

The custom gradient is copied from zfit as it is; only ``normalization_nograd`` (zfit's chunked
integral) is replaced by a plain sum of ``func`` over the inputs, which is what it computes for one
chunk.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tensorflow as tf


def normalization_nograd(func, x, **_):
    return tf.reduce_sum(func(x))


def normalization_chunked(func, x=None):
    x_is_none = x is None

    @tf.custom_gradient
    def normalization_func(x):
        if x_is_none:
            x = None
        value = normalization_nograd(func=func, x=x)

        def grad_fn(dy, variables=None):
            if variables is None:
                return dy, None
            with tf.GradientTape() as tape:
                value = normalization_nograd(func=func, x=x)

            return dy, tape.gradient(value, variables)

        return value, grad_fn

    fake_x = 1 if x_is_none else x
    return normalization_func(fake_x)


scale = tf.Variable(2.0)
cases = {
    "func reads a trainable variable": lambda x: x * scale,
    "func reads no trainable variable": lambda x: x * 2.0,
}
x = tf.constant([1.0, 2.0])


def gradient(func):
    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = normalization_chunked(func, x)
        return tape.gradient(y, x)
    return run


for label, func in cases.items():
    for mode, fn in [("eager", gradient(func)), ("tf.function", tf.function(gradient(func)))]:
        try:
            print(f"{label:34} {mode:12} OK", fn().numpy().tolist())
        except Exception as e:
            print(f"{label:34} {mode:12} RAISES {type(e).__name__}: {str(e).strip().splitlines()[-1][:150]}")
