"""A helper of the forward calls Python any() on a tensor.

Source: https://github.com/tensorflow/tensorflow/issues/40143
Bug: Python iteration over a tensor raises OperatorNotAllowedInGraphError when traced (the
thread). The helper `_has_negative` iterates the tensor with any(); the forward calls it, so the
custom gradient fails under tf.function and works eagerly.
Expect: CG010
"""

import tensorflow as tf


def _has_negative(t):
    return any(t < 0.0)


@tf.custom_gradient
def abs_or_identity(x):
    negative = _has_negative(x)
    y = tf.abs(x) if negative else x

    def grad(dy):
        return dy * tf.sign(x) if negative else dy

    return y, grad


def run_case():
    x = tf.constant([-1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = abs_or_identity(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
