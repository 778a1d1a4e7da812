"""grad returns a local derivative built by a helper and never multiplies the upstream in.

Source: https://github.com/tensorflow/tensorflow/pull/41927
Bug: the pull request documents what `dy` is because users return dy/dx alone. A grad that
returns the helper's `tf.ones_like(x) * slope` is right only for a plain sum loss; under
reduce_mean (or any scaled loss) the gradient is silently wrong in both modes.
Expect: CG013
"""

import tensorflow as tf


def _hard_tanh_slope(x):
    return tf.cast(tf.abs(x) <= 1.0, x.dtype)


@tf.custom_gradient
def hard_tanh(x):
    def grad(dy):
        return tf.ones_like(x) * _hard_tanh_slope(x)

    return tf.clip_by_value(x, -1.0, 1.0), grad


def run_case():
    x = tf.constant([0.5, 2.0, -0.5, 0.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean(hard_tanh(x))
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()


TRUTH = [0.25, 0.0, 0.25, 0.25]
