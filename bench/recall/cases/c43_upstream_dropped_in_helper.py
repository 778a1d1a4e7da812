"""grad hands the upstream to a helper that never uses it.

Source: https://github.com/tensorflow/tensorflow/pull/41927
Bug: the pull request documents that grad must multiply the upstream `dy` through. Here grad
passes `dy` on, but the module-level helper computes only the local derivative and drops its
`dy` parameter: the gradient is right for a plain-sum loss and silently wrong under a scaled or
averaged one, eagerly and under tf.function.
Expect: CG013
"""

import tensorflow as tf


def _ste_slope(x, dy):
    del dy  # "the slope is all the estimator needs"
    return tf.cast(tf.abs(x) <= 1.0, x.dtype)


@tf.custom_gradient
def ste_sign(x):
    def grad(dy):
        return _ste_slope(x, dy)

    return tf.sign(x), grad


def run_case():
    x = tf.constant([0.5, 2.0, -0.3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean(ste_sign(x))
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as a training step runs it
    return tf.function(run_case)()


TRUTH = [0.3333, 0.0, 0.3333]
