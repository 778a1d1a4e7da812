"""grad takes *args and unpacks one upstream, but the forward returns two outputs.

Source: https://github.com/tensorflow/tensorflow/issues/58941
Bug: a function with several inputs and two outputs (y1, y2). TF passes grad one upstream per
output; grad unpacks `(dy,) = args` as if there were one and raises ValueError when the gradient
is taken.
Expect: CG002
"""

import tensorflow as tf


@tf.custom_gradient
def polar(r, theta):
    x = r * tf.cos(theta)
    y = r * tf.sin(theta)

    def grad(*args):
        (dy,) = args
        return dy * tf.cos(theta), -dy * r * tf.sin(theta)

    return (x, y), grad


def run_case():
    r, theta = tf.constant(2.0), tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch([r, theta])
        x, y = polar(r, theta)
        loss = x + y
    return tape.gradient(loss, [r, theta])


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
