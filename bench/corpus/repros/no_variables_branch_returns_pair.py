"""grad's branch for calls without variables returns (dy, None) for a one-input function.

Corpus finding: CG003 (zfit/zfit, integration.py, normalization_chunked). When the forward reads
no variable TF calls grad(dy) with variables=None; the branch then returns two gradients for one
input and taking the gradient raises (ValueError eagerly, an internal error under tf.function).
The branch with variables returns (dy, var_grads), which is right.
"""

import tensorflow as tf
from _harness import both_modes


@tf.custom_gradient
def average(x):
    value = tf.reduce_mean(x)

    def grad(dy, variables=None):
        if variables is None:
            return dy, None  # two gradients for the one input x
        return dy * tf.ones_like(x) / tf.size(x, out_type=x.dtype), [tf.zeros_like(v) for v in variables]

    return value, grad


def step():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = average(x)
    return tape.gradient(y, x)


if __name__ == "__main__":
    both_modes("no-variables branch returns a pair", step)
