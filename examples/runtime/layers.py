"""A Keras layer and a helper whose custom gradients only break under tf.function or with variables."""

import keras
import tensorflow as tf


class ScaleShift(keras.layers.Layer):
    """y = x * scale + shift, with a hand-written gradient for both weights."""

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")
        self.shift = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="shift")

    def call(self, x):
        scale, shift = self.scale.value, self.shift.value

        @tf.custom_gradient
        def scale_shift(x):
            def grad(dy, variables=None):
                # Bug: assumes `variables` arrives as [scale, shift]; its order is not guaranteed.
                def per_feature(t):
                    return tf.reduce_sum(tf.reshape(t, [-1, tf.shape(t)[-1]]), axis=0)
                return dy * scale, [per_feature(dy * x), per_feature(dy)]
            return x * scale + shift, grad
        return scale_shift(x)


@tf.custom_gradient
def safe_log(x):
    """Works in eager tests, fails inside tf.function / Model.fit."""
    if tf.reduce_min(x) <= 0.0:
        x = tf.maximum(x, 1e-6)

    def grad(dy):
        return dy / x
    return tf.math.log(x), grad
