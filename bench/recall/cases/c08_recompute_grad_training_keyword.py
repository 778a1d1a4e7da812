"""A tf.recompute_grad block is called with training= under tf.function.

Source: https://github.com/tensorflow/tensorflow/issues/56692
Bug: the report: tf.recompute_grad does not take keyword arguments in graph mode; passing
`training=True` raises. Works eagerly.
Expect: CG008
"""

import tensorflow as tf

W = tf.Variable([[1.0, 0.5], [0.0, 1.0]])


def block(x, training=False):
    h = tf.matmul(x, W)
    return tf.nn.dropout(h, 0.5, seed=1) * 0.0 + h if training else h


checkpointed = tf.recompute_grad(block)


def run_case():
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        y = checkpointed(x, training=True)
        loss = tf.reduce_sum(y)
    return tape.gradient(loss, W)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
