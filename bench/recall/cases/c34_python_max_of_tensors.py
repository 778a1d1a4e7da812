"""grad takes Python max() of two tensors to guard a division.

Source: https://github.com/tensorflow/probability/issues/1138
Bug: `max(a, b)` compares the tensors with `>` and takes the truth value; it works eagerly on
scalars and raises OperatorNotAllowedInGraphError under tf.function.
Expect: CG009
"""

import tensorflow as tf


@tf.custom_gradient
def normalize(x):
    norm = tf.norm(x)

    def grad(dy):
        safe = max(norm, tf.constant(1e-6))
        return dy / safe

    return x / norm, grad


def run_case():
    x = tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = normalize(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
