"""grad converts the upstream with keras.ops.convert_to_numpy.

Source: https://github.com/keras-team/keras/pull/19302
Bug: the pull request adds keras.ops.custom_gradient across backends; grad functions there are
written with keras.ops. keras.ops.convert_to_numpy on a symbolic tensor (tf.function, fit)
raises; it works eagerly.
Expect: CG010
"""

import keras
import tensorflow as tf


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        scale = keras.ops.convert_to_numpy(1.0 - 1.0 / (1.0 + e))
        return upstream * scale

    return tf.math.log(1.0 + e), grad


def run_case():
    x = tf.constant([0.0, 100.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
