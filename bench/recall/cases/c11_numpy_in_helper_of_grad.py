"""grad computes its derivative with NumPy in a helper.

Source: https://github.com/tensorflow/tensorflow/issues/36792
Bug: the report: np.power on a tensor inside a traced function raises "Cannot convert a symbolic
Tensor to a numpy array". Here a sigmoid derivative helper uses NumPy and grad calls it on the
saved output.
Expect: CG010
"""

import numpy as np
import tensorflow as tf


def _sigmoid_slope(s):
    return s * (1.0 - np.asarray(s))


@tf.custom_gradient
def sigmoid(x):
    s = 1.0 / (1.0 + tf.exp(-x))

    def grad(dy):
        return dy * _sigmoid_slope(s)

    return s, grad


def run_case():
    x = tf.constant([0.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = sigmoid(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
