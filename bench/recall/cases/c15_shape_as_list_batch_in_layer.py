"""grad builds a NumPy array from `dy.shape.as_list()[0]` in a Keras layer.

Source: https://github.com/tensorflow/tensorflow/issues/26270
Bug: the reporter's layer reads `dy.shape.as_list()[0]` in its custom grad; in a Keras model the
batch dimension is None when traced, so the shape list for the gradient holds None and building
it raises TypeError. Works on a concrete eager batch.
Expect: CG015
"""

import keras
import tensorflow as tf


class SelectSubnet(keras.layers.Layer):
    def call(self, x):
        @tf.custom_gradient
        def select(v):
            def grad(dy):
                rows = dy.shape.as_list()[0]
                return tf.ones([rows, 3]) * dy

            return v * 1.0, grad

        return select(x)


LAYER = SelectSubnet()


def gradient_of(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = LAYER(x)
    return tape.gradient(y, x)


def run_case():
    return gradient_of(tf.constant([[1.0, 2.0, 3.0]]))


def graph_check():  # as Keras traces it: the batch dimension unknown
    traced = tf.function(gradient_of, input_signature=[tf.TensorSpec([None, 3])])
    return traced(tf.constant([[1.0, 2.0, 3.0]]))
