"""Custom gradients that read variables (cg-lint CG004-CG008, CG018)."""

import functools

import tensorflow as tf

gain = tf.Variable(2.0, name="gain")
offset = tf.Variable(0.5, name="offset")


@tf.custom_gradient
def scaled_tanh(x):
    """tanh(gain * x): reads `gain`, so TF calls grad with variables=."""
    y = tf.tanh(gain * x)

    def grad(dy):
        return dy * gain * (1.0 - y * y)

    return y, grad


@tf.custom_gradient
def affine(x):
    """gain * x + offset with hand-written variable gradients."""
    g = tf.convert_to_tensor(gain)

    def grad(dy, variables=None):
        d_gain = tf.reduce_sum(dy * x)
        d_offset = tf.reduce_sum(dy)
        return dy * g, [d_gain, d_offset]  # listed in read order

    return g * x + offset, grad


@tf.custom_gradient
def shifted(x):
    def grad(dy, variables=None):
        return dy, (tf.reduce_sum(dy),)  # a tuple

    return x + offset, grad


@tf.custom_gradient
def damped(x):
    """x * gain, with grad reading `gain` again: fine until the call sits inside tf.cond under tf.function."""

    def grad(dy, variables=None):
        return dy * gain, [tf.reduce_sum(dy * x) for _ in variables]

    return x * gain, grad


@tf.function
def maybe_damped(x, use_gain):
    return tf.cond(use_gain, lambda: damped(x), lambda: x)


# tf: grad(lambda x: maybe_damped(x, tf.constant(True)), [1.0, 2.0]) => both raises Tensor.graph is undefined


class Gate(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, inputs):
        @tf.custom_gradient
        def gate(x):
            def grad(dy, variables=None):
                return dy * self.w, [tf.reduce_sum(dy * x, axis=0)]

            return x * self.w, grad

        return gate(inputs)


@tf.custom_gradient
def temperature_softmax(logits, temperature=1.0):
    def grad(dy):
        y = tf.nn.softmax(logits / temperature)
        return (dy - tf.reduce_sum(dy * y, axis=-1, keepdims=True)) * y / temperature

    return tf.nn.softmax(logits / temperature), grad


soft = functools.partial(temperature_softmax, temperature=tf.constant(0.5))  # a tensor: no gradient for it
probs = temperature_softmax(tf.constant([1.0, 2.0]), temperature=tf.constant(2.0))
