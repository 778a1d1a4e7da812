"""A list of tensors passed as one input; grad returns one gradient for the whole list.

Source: https://github.com/tensorflow/tensorflow/issues/21756
Bug: the reporter passes a sequence of tensors as the input of a custom gradient, as the old
documentation suggested. TF flattens the list into one input per tensor, so grad must return a
gradient for each; returning one raises "expected to return 2 gradients, but returned 1".
Expect: CG003
"""

import tensorflow as tf


@tf.custom_gradient
def weighted_pair(pair):
    a, b = pair
    y = 2.0 * a + 3.0 * b

    def grad(dy):
        return tf.stack([2.0 * dy, 3.0 * dy])

    return y, grad


def run_case():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = weighted_pair([a, b])
    return tape.gradient(y, [a, b])


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
