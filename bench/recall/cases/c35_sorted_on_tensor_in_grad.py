"""grad sorts a tensor with Python sorted().

Source: https://github.com/tensorflow/tensorflow/issues/40916
Bug: Python iteration of a tensor (here by sorted()) works eagerly and raises
OperatorNotAllowedInGraphError under tf.function, as the thread's reporters found.
Expect: CG010
"""

import tensorflow as tf


def _median(t):
    ordered = sorted(t)
    return ordered[len(ordered) // 2]


@tf.custom_gradient
def median_clip(x):
    def grad(dy):
        return tf.minimum(dy, _median(dy))

    return tf.identity(x), grad


def run_case():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = median_clip(x) * tf.constant([1.0, 5.0, 9.0])
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
