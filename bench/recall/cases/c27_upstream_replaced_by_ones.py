"""grad replaces its upstream with ones before using it.

Source: https://github.com/keras-team/keras/issues/3119
Bug: gradient-reversal code in the thread multiplies "all gradients" by a negative factor. A
port that overwrites the upstream with `tf.ones_like(dy)` (to "reverse the gradient") returns
-lambda whatever the loss: wrong as soon as the loss is not a plain sum.
Expect: CG013
"""

import tensorflow as tf


def reverse(hp_lambda):
    @tf.custom_gradient
    def flip(x):
        def grad(dy):
            dy = tf.ones_like(dy)
            return -hp_lambda * dy

        return tf.identity(x), grad

    return flip


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = 3.0 * tf.reduce_sum(reverse(0.5)(x))
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()


TRUTH = [-1.5, -1.5]
