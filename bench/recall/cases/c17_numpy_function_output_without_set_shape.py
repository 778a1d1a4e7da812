"""The static shape of a numpy_function output is used without set_shape.

Source: https://github.com/tensorflow/tensorflow/issues/43916
Bug: the report computes sin and its derivative with tf.numpy_function inside a custom gradient.
The outputs of numpy_function have unknown static shape under tf.function; the forward reads
`y.shape[-1]` to build a reshape and raises there. Works eagerly.
Expect: CG017
"""

import numpy as np
import tensorflow as tf


def _sin_and_slope(x):
    return np.sin(x), np.cos(x)


@tf.custom_gradient
def np_sin(x):
    y, slope = tf.numpy_function(_sin_and_slope, [x], [tf.float32, tf.float32])
    y = tf.reshape(y, [-1, y.shape[-1]])

    def grad(dy):
        return tf.reshape(dy, tf.shape(x)) * slope

    return y, grad


def run_case():
    x = tf.constant([[0.0, 1.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = np_sin(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
