"""grad declares a second positional parameter, but the forward has one output.

Corpus finding: CG002 (rashaad-meyer/ml_masters_uct, CustomConvolutionLayer.py). TF calls grad
with one upstream per output and adds `variables=` only when the forward reads variables, so the
extra parameter is never filled: the gradient raises TypeError in both modes.
"""

import tensorflow as tf
from _harness import both_modes


@tf.custom_gradient
def scale(x):
    def grad(upstream, extra):  # `extra` has no default and no upstream to fill it
        return upstream * 3.0

    return x * 3.0, grad


def step():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale(x)
    return tape.gradient(y, x)


if __name__ == "__main__":
    both_modes("extra upstream parameter", step)
