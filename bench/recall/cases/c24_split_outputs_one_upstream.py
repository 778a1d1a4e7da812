"""The forward returns the list tf.split makes; grad takes one upstream.

Source: https://github.com/pytorch/pytorch/issues/87713
Bug: the report: a custom-gradient forward that returns a list of tensors. In TF each element of
the list is an output with its own upstream; grad with a single parameter is called with three
and raises TypeError.
Expect: CG002
"""

import tensorflow as tf


@tf.custom_gradient
def thirds(x):
    parts = tf.split(x, 3)

    def grad(dparts):
        return tf.concat(dparts, 0)

    return parts, grad


def run_case():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = thirds(x)
        loss = a + 2.0 * b + 3.0 * c
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
