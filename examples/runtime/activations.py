"""Activation functions with hand-written gradients; two of them are subtly wrong."""

import tensorflow as tf


@tf.custom_gradient
def binarize(x):
    """Sign with a straight-through gradient: intentionally not the derivative of sign()."""
    def grad(dy):
        return dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)
    return tf.sign(x), grad


@tf.custom_gradient
def softplus(x):
    """The forward is stable; the gradient overflows to inf/inf for large x."""
    def grad(dy):
        ex = tf.exp(x)
        return dy * ex / (ex + 1.0)
    return tf.math.softplus(x), grad


@tf.custom_gradient
def leaky_clip(x):
    """Gradient summed over the batch by mistake: a scalar for every input shape."""
    def grad(dy):
        return tf.reduce_sum(tf.where(tf.abs(x) < 3.0, dy, 0.01 * dy))
    return tf.clip_by_value(x, -3.0, 3.0), grad


@tf.custom_gradient
def smooth_abs(x):
    """A correct one: sqrt(x^2 + eps) and its derivative."""
    r = tf.sqrt(x * x + 1e-3)

    def grad(dy):
        return dy * x / r
    return r, grad
