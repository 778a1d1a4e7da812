"""Functions whose inputs differ in shape and dtype: runtime-check finds them from the source."""

import tensorflow as tf


@tf.custom_gradient
def dense(x, w, b):
    """x: [batch, d] @ w: [d, k] + b: [k]; the weight gradient is transposed by mistake."""
    def grad(dy):
        dx = tf.matmul(dy, w, transpose_b=True)
        dw = tf.matmul(dy, x, transpose_a=True)  # should be tf.matmul(x, dy, transpose_a=True)
        return dx, dw, tf.reduce_sum(dy, axis=0)
    return tf.matmul(x, w) + b, grad


@tf.custom_gradient
def embed(table, ids):
    """Rows of a table for integer ids; the ids get no gradient."""
    def grad(dy):
        return tf.math.unsorted_segment_sum(dy, ids, tf.shape(table)[0]), None
    return tf.gather(table, ids), grad


def make_reversal(strength=1.0):
    """A gradient-reversal op built by a factory."""
    @tf.custom_gradient
    def reverse(x):
        def grad(dy):
            return -strength * dy
        return tf.identity(x), grad
    return reverse


@tf.custom_gradient
def threshold_ste(x, threshold):
    """Straight-through estimator: None for the threshold is right (the forward is flat in it)."""
    def grad(dy):
        return dy, None
    return tf.cast(x > threshold, x.dtype), grad
