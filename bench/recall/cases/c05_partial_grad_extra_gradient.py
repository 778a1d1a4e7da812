"""grad is functools.partial of a module-level function that returns one gradient too many.

Source: https://github.com/pumpikano/tf-dann/issues/27
Bug: the thread's flip_grad_layer(x, l) returns `-dy * l, None` (a gradient for x and one for l).
A port that binds l in a functools.partial of a module-level grad keeps the `None` for l, though
the custom gradient now has one input: "expected to return 1 gradients, but returned 2".
Expect: CG003
"""

import functools

import tensorflow as tf


def _flip_grad(scale, dy):
    return tf.negative(dy) * scale, None


def flip_gradient(scale):
    @tf.custom_gradient
    def flip(x):
        return tf.identity(x), functools.partial(_flip_grad, scale)

    return flip


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = flip_gradient(0.3)(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
