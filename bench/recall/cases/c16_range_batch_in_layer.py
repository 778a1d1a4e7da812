"""The forward loops `range(x.shape[0])` in a Keras layer's custom gradient.

Source: https://github.com/tensorflow/tensorflow/issues/50741
Bug: a custom layer with a custom gradient, used on tensors whose batch dimensions are undefined
(the thread's last report). `range(v.shape[0])` raises TypeError when the batch is None, which is
what Keras traces with.
Expect: CG015
"""

import keras
import tensorflow as tf


class RowScale(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def scale_rows(v):
            rows = [v[i] * float(i + 1) for i in range(v.shape[0])]

            def grad(dy):
                return tf.stack([dy[i] * float(i + 1) for i in range(v.shape[0])])

            return tf.stack(rows), grad

        return scale_rows(x)


LAYER = RowScale()


def gradient_of(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = LAYER(x)
    return tape.gradient(y, x)


def run_case():
    return gradient_of(tf.constant([[1.0, 2.0], [3.0, 4.0]]))


def graph_check():  # as Keras traces it: the batch dimension unknown
    traced = tf.function(gradient_of, input_signature=[tf.TensorSpec([None, 2])])
    return traced(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
