"""A custom gradient called with *state gets three inputs; grad returns two gradients.

Source: https://github.com/tensorflow/tensorflow/issues/55296
Bug: the report calls its custom gradient with several inputs and returns a gradient per input
from grad(*upstream). Called as `cell(*state)` with a three-tuple, the function has three inputs
but grad returns two: "expected to return 3 gradients, but returned 2".
Expect: CG003
"""

import tensorflow as tf


@tf.custom_gradient
def cell(*inputs):
    total = tf.add_n(list(inputs))

    def grad(dy):
        return dy, dy

    return total, grad


def run_case():
    state = (tf.constant(1.0), tf.constant(2.0), tf.constant(3.0))
    with tf.GradientTape() as tape:
        tape.watch(state)
        y = cell(*state)
    return tape.gradient(y, list(state))


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
