"""grad hands its return to a helper that returns no gradient at all.

Source: https://github.com/tensorflow/tensorflow/issues/26048
Bug: the report's grad returns an empty list for a one-input identity (TF 1.13 aborted). Here the
empty list comes from a module-level helper grad delegates to, so the return is out of sight of
the forward. TF 2.21 raises when the gradient is taken.
Expect: CG003
"""

import tensorflow as tf


def _frozen_grads(dy):
    del dy  # frozen: no gradient for anything
    return []


@tf.custom_gradient
def frozen_identity(x):
    def grad(dy):
        return _frozen_grads(dy)

    return tf.identity(x), grad


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = frozen_identity(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
