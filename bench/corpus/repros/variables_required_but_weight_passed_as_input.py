"""A weight passed to the custom gradient as an input, and a grad that requires `variables`.

Corpus finding: CG004 (rashaad-meyer/ml_masters_uct, DeconvLayer.py). TF leaves the inputs out of
`variables`, so when the only variable the forward reads is an input, TF calls grad without
`variables` and the required parameter is missing. A Keras 3 weight is a wrapper, not the
tf.Variable itself, so eager TF does not recognise it as the input and passes it in `variables`
as well; the count then fails instead. Either way the gradient raises.
"""

import tensorflow as tf
from _harness import both_modes


@tf.custom_gradient
def apply_weight(x, w):
    def grad(upstream, variables):  # required, but TF never passes it here
        return [upstream * w, tf.reduce_sum(upstream * x)], []

    return x * w, grad


w = tf.Variable(2.0)


def step_plain():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = apply_weight(x, w)
    return tape.gradient(y, w)


class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, x):
        return apply_weight(x, self.w)


layer = Scale()
layer.build(())


def step_keras():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = layer(x)
    return tape.gradient(y, layer.trainable_variables)


if __name__ == "__main__":
    both_modes("tf.Variable as input", step_plain)
    both_modes("Keras weight as input", step_keras)
