"""The forward returns nested outputs ((a, b), c); grad takes two upstreams.

Source: https://github.com/tensorflow/tensorflow/issues/55296
Bug: the report returns a tuple of outputs whose first element is itself a structure. TF flattens
the outputs with tf.nest, so grad gets one upstream per leaf (three here); a grad written for the
two top-level elements raises TypeError.
Expect: CG002
"""

import tensorflow as tf


@tf.custom_gradient
def split_and_sum(x):
    halves = (x[:1], x[1:])
    total = tf.reduce_sum(x)

    def grad(dhalves, dtotal):
        return tf.concat(dhalves, 0) + dtotal

    return (halves, total), grad


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        (first, second), total = split_and_sum(x)
        loss = tf.reduce_sum(first) + tf.reduce_sum(second) + total
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
