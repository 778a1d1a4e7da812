"""grad takes *args, unpacks its upstream, and converts it to a Python float.

Source: https://github.com/keras-team/keras/pull/19302
Bug: the pull request writes grad as `def grad(*args, upstream=None)` and unpacks
`upstream, = args`. A grad in that style that clips with a Python float of the (scalar) upstream
works eagerly; under tf.function `float()` of the symbolic upstream raises TypeError.
Expect: CG010
"""

import tensorflow as tf


@tf.custom_gradient
def clipped_identity(x):
    def grad(*args):
        (upstream,) = args
        size = abs(float(upstream))
        return upstream * min(1.0, 1.0 / max(size, 1e-12))

    return tf.identity(x), grad


def run_case():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clipped_identity(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as a training step runs it
    return tf.function(run_case)()
