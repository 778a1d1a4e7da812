"""A configuration object is passed to a custom gradient as a positional input.

Source: https://github.com/pumpikano/tf-dann/issues/27
Bug: the thread's flip_grad_layer(x, l) takes its factor positionally. Passing a whole config
object instead (`flip(x, cfg)`), the forward reads `cfg.factor` as a Python value; TF converts
every positional input to a tensor and fails on the object ("Attempt to convert a value ... to a
Tensor").
Expect: CG012
"""

import tensorflow as tf


class FlipConfig:
    factor = 0.5


@tf.custom_gradient
def flip(x, cfg):
    factor = cfg.factor

    def grad(dy):
        return -factor * dy, None

    return tf.identity(x), grad


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = flip(x, FlipConfig())
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
