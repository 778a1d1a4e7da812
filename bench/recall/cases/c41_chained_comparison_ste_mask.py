"""A straight-through estimator's grad builds its mask with a chained comparison.

Source: https://github.com/tensorflow/tensorflow/issues/1454
Bug: the report: `lower <= t < upper` on tensors does not mean the element-wise test. Python
evaluates it as `(lower <= t) and (t < upper)`, taking the truth value of a tensor: with a
vector that raises eagerly, and under tf.function it always raises
OperatorNotAllowedInGraphError. Here it is the clipping mask of an STE's grad.
Expect: CG009
"""

import tensorflow as tf


@tf.custom_gradient
def ste_clip(x):
    def grad(dy):
        inside = -1.0 <= x <= 1.0
        return tf.where(inside, dy, tf.zeros_like(dy))

    return tf.clip_by_value(x, -1.0, 1.0), grad


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = ste_clip(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as a training step runs it
    return tf.function(run_case)()
