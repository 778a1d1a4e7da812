"""A module-level grad function takes one upstream for a forward with two outputs.

Source: https://github.com/tensorflow/tensorflow/issues/58941
Bug: the report's function has two outputs and asks how grad receives their gradients. With the
grad written once at module level and bound with functools.partial, it takes one upstream; TF
calls it with two and it raises TypeError (takes 2 positional arguments but 3 were given).
Expect: CG002
"""

import functools

import tensorflow as tf


def _sincos_grad(x, dy):
    return dy * tf.cos(x)


@tf.custom_gradient
def sincos(x):
    return (tf.sin(x), tf.cos(x)), functools.partial(_sincos_grad, x)


def run_case():
    x = tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        s, c = sincos(x)
        loss = s + c
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
