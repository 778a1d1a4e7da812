"""Custom gradients with arity mistakes. `cg-lint examples/` reports each one.

Every function here runs eagerly until a gradient is taken (or until it is traced), so the
mistakes slip past a quick smoke test.
"""

import tensorflow as tf


@tf.custom_gradient
def scaled_product(x, w):
    """x * w with a gradient clipped to [-1, 1]; forgets w's gradient."""
    y = x * w

    def grad(dy):
        return tf.clip_by_value(dy * w, -1.0, 1.0)

    return y, grad


@tf.custom_gradient
def mean_and_spread(x):
    """Two outputs returned flat beside the grad: TF unpacks exactly (outputs, grad)."""
    mean = tf.reduce_mean(x)
    spread = tf.reduce_max(x) - tf.reduce_min(x)

    def grad(dmean, dspread):
        n = tf.cast(tf.size(x), x.dtype)
        return dmean / n + dspread * tf.cast(tf.equal(x, tf.reduce_max(x)), x.dtype)

    return mean, spread, grad


@tf.custom_gradient
def split_halves(x):
    """Two outputs, but grad expects one packed upstream."""
    low, high = tf.split(x, 2)

    def grad(dhalves):
        return tf.concat(dhalves, axis=0)

    return (low, high), grad


@tf.custom_gradient
def stable_softplus(x):
    """Correct: log(1 + exp(x)) with a gradient that does not overflow."""
    y = tf.nn.softplus(x)

    def grad(dy):
        return dy * tf.sigmoid(x)

    return y, grad
