"""grad(*upstream) returns one indexed upstream for a function of two inputs.

Source: https://github.com/tensorflow/tensorflow/issues/55296
Bug: the report's grad takes `*upstream` and builds its gradients by indexing and slicing the
upstream tuple. Returning `upstream[0]` alone gives one gradient where the function has two
inputs: "expected to return 2 gradients, but returned 1".
Expect: CG003
"""

import tensorflow as tf


@tf.custom_gradient
def copy_gradient(value, target):
    return tf.identity(target), lambda *upstream: upstream[0]


def run_case():
    value, target = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([value, target])
        y = copy_gradient(value, target)
    return tape.gradient(y, [value, target])


def graph_check():  # the same under tf.function, as a training step runs it
    return tf.function(run_case)()
