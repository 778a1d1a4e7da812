"""grad returns a starred list plus one gradient too many.

Source: https://github.com/tensorflow/tensorflow/issues/26048
Bug: the report's second half: grad returns more gradients than the function has inputs, which
TF 1.13 accepted silently. Here the surplus hides behind a starred list built from the inputs.
TF 2.21 raises "expected to return 2 gradients, but returned 3".
Expect: CG003
"""

import tensorflow as tf


@tf.custom_gradient
def weighted_sum(a, b):
    def grad(dy):
        per_input = [dy * 1.0, dy * 2.0]
        return (*per_input, dy)  # the extra dy was the "bias" gradient of an older version

    return a + 2.0 * b, grad


def run_case():
    a, b = tf.constant(1.0), tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        y = weighted_sum(a, b)
    return tape.gradient(y, [a, b])


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
