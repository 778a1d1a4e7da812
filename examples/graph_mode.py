"""Custom gradients that work eagerly and break under tf.function (cg-lint CG009-CG012)."""

import numpy as np
import tensorflow as tf


@tf.custom_gradient
def leaky_clip(x, slope):
    """Clip to [-1, 1] with a leaky gradient outside; `slope` is configuration."""
    y = tf.clip_by_value(x, -1.0, 1.0)

    def grad(dy):
        inside = tf.abs(x) <= 1.0
        if tf.reduce_all(inside):  # a Python branch on a tensor
            return dy, None
        return tf.where(inside, dy, dy * slope), None

    return y, grad


@tf.custom_gradient
def normalized(x):
    """x / ||x|| with a gradient that uses NumPy for the norm."""
    norm = tf.norm(x)
    y = x / norm

    def grad(dy):
        n = np.linalg.norm(dy)  # NumPy on a symbolic tensor
        return (dy - y * tf.reduce_sum(dy * y)) / norm * n / n

    return y, grad


@tf.custom_gradient
def repeat_sin(x, times):
    """sin applied `times` times: `times` arrives as a tensor under tf.function."""
    y = x
    for _ in range(times):
        y = tf.sin(y)

    def grad(dy):
        return dy * tf.cos(x), None

    return y, grad


@tf.custom_gradient
def safe_sqrt(x):
    """sqrt with a finite gradient at 0, written with tf.cond on a vector."""
    y = tf.sqrt(x)
    small = x < 1e-12

    def grad(dy):
        return tf.cond(small, lambda: tf.zeros_like(dy), lambda: dy / (2.0 * y))

    return y, grad


data = tf.constant([0.25, 1.0, 4.0])


@tf.function  # each custom gradient above runs traced here, where it breaks
def total():
    with tf.GradientTape() as tape:
        tape.watch(data)
        y = safe_sqrt(data) + leaky_clip(data, 0.1) + repeat_sin(data, 3) + normalized(data)
    return tape.gradient(y, data)


if __name__ == "__main__":
    print(total())
