"""grad of a custom gradient in a Keras layer calls a method of the layer that uses .numpy().

Source: https://github.com/tensorflow/tensorflow/issues/50741
Bug: the thread's layers define custom gradients inside `call` and were written against eager
tensors. The layer's helper method reads `.numpy()` of the upstream; Keras traces `call` (fit,
predict, a functional model), where the tensor is symbolic and `.numpy()` raises AttributeError.
Expect: CG010
"""

import keras
import numpy as np
import tensorflow as tf


class ClippedGrad(keras.layers.Layer):
    def _clip(self, g):
        return np.clip(g.numpy(), -1.0, 1.0)

    def call(self, x):
        @tf.custom_gradient
        def identity(v):
            def grad(dy):
                return self._clip(dy)

            return tf.identity(v), grad

        return identity(x)


LAYER = ClippedGrad()


def run_case():
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = LAYER(x) * 3.0
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as Keras runs it
    return tf.function(run_case)()
