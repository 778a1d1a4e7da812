"""The NumPy kernel of a custom gradient returns float64 where Tout says float32.

Source: https://github.com/tensorflow/tensorflow/issues/47033
Bug: the report runs a compiled function through tf.numpy_function inside a gradient and finds
graph-mode failures. Here grad's NumPy kernel builds its result with np.ones (float64) while the
declared output is float32: InvalidArgumentError in both modes.
Expect: CG016
"""

import numpy as np
import tensorflow as tf


def _clip_mask(x):
    mask = np.ones(x.shape)
    mask[np.abs(x) > 1.0] = 0.0
    return mask


@tf.custom_gradient
def clip(x):
    def grad(dy):
        mask = tf.numpy_function(_clip_mask, [x], tf.float32)
        return dy * mask

    return tf.clip_by_value(x, -1.0, 1.0), grad


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clip(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
