"""grad returns two gradients in one branch of a configuration switch.

Source: https://github.com/michetonu/gradient_reversal_keras_tf/issues/9
Bug: a gradient-reversal layer ported to TF 2 (the thread's subject). One branch of grad, taken
when the layer reverses, still returns the gradient for the removed `hp_lambda` input; the
function has one input, so the gradient raises in both modes when the switch is on.
Expect: CG003
"""

import tensorflow as tf


class ReversalConfig:
    reverse = True
    hp_lambda = 1.0


CONFIG = ReversalConfig()


@tf.custom_gradient
def reverse_gradient(x):
    def grad(dy):
        if CONFIG.reverse:
            return -CONFIG.hp_lambda * dy, None
        return dy

    return tf.identity(x), grad


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = reverse_gradient(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
