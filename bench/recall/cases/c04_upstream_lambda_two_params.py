"""grad is a lambda with two upstream parameters for a one-output forward.

Source: https://github.com/tensorflow/tensorflow/issues/21756
Bug: the thread is about what custom_gradient's f and grad take and return; the reporter's grad
took an extra parameter. Written as a lambda here, TF calls it with one upstream and it raises
TypeError (missing 1 required positional argument).
Expect: CG002
"""

import tensorflow as tf


@tf.custom_gradient
def margin(x):
    y = tf.nn.relu(x - 0.5)
    return y, lambda dy, dmask: dy * tf.cast(x > 0.5, dy.dtype)


def run_case():
    x = tf.constant([0.2, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = margin(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
