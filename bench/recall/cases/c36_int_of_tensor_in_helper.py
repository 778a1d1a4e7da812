"""A helper of the forward converts a tensor to a Python int.

Source: https://github.com/tensorflow/tensorflow/issues/26270
Bug: the thread's custom grad mixes NumPy sizes with tensor values. `int(tf.reduce_sum(mask))` on
a symbolic tensor raises TypeError under tf.function; eagerly it works.
Expect: CG010
"""

import tensorflow as tf


def _count_active(x):
    return int(tf.reduce_sum(tf.cast(x > 0.0, tf.int32)))


@tf.custom_gradient
def active_mean(x):
    n = _count_active(x)
    y = tf.reduce_sum(tf.nn.relu(x)) / float(max(n, 1))

    def grad(dy):
        return dy * tf.cast(x > 0.0, x.dtype) / float(max(n, 1))

    return y, grad


def run_case():
    x = tf.constant([1.0, -2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = active_mean(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
