"""grad normalises by len() of a tensor computed in a helper.

Source: https://github.com/tensorflow/tensorflow/issues/26270
Bug: the thread's layer mixes static and dynamic sizes inside a custom grad. `len(t)` of a
tensor whose first dimension is unknown raises TypeError ("len is not well defined for a
symbolic Tensor") when traced with an unknown batch.
Expect: CG010
"""

import tensorflow as tf


def _per_row(t):
    return t / float(len(t))


@tf.custom_gradient
def row_mean(x):
    def grad(dy):
        return _per_row(tf.ones_like(x) * dy)

    return tf.reduce_mean(x, axis=0), grad


def gradient_of(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = row_mean(x)
    return tape.gradient(y, x)


def run_case():
    return gradient_of(tf.constant([[1.0], [3.0]]))


def graph_check():  # a batch of unknown size, as Keras traces
    traced = tf.function(gradient_of, input_signature=[tf.TensorSpec([None, 1])])
    return traced(tf.constant([[1.0], [3.0]]))
