"""A decorator forwards the caller's keyword arguments into a custom gradient.

Source: https://github.com/bojone/bert4keras/issues/186
Bug: bert4keras switches recomputation on with a decorator around a layer's call, which passes
the call's keyword arguments (`training=`, `mask=`) on. Forwarded into a tf.custom_gradient they
raise under tf.function ("keywords arguments only when eager execution is enabled").
Expect: CG008
"""

import functools

import tensorflow as tf


def with_training_flag(fn):
    @functools.wraps(fn)
    def wrapper(x, **kwargs):
        kwargs.setdefault("training", tf.constant(True))
        return fn(x, **kwargs)

    return wrapper


@with_training_flag
@tf.custom_gradient
def noisy_identity(x, training=None):
    return tf.identity(x), lambda dy: dy


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = noisy_identity(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
