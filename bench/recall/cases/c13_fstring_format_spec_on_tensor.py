"""The forward logs a tensor with an f-string format spec.

Source: https://github.com/tensorflow/tensorflow/issues/40916
Bug: the thread collects Python operations on tensors that work eagerly and fail in graph mode.
`f"{t:.3f}"` calls Tensor.__format__ with a spec, which a symbolic tensor does not support:
TypeError "unsupported format string passed to SymbolicTensor.__format__".
Expect: CG010
"""

import tensorflow as tf


@tf.custom_gradient
def clipped(x):
    peak = tf.reduce_max(tf.abs(x))
    tf.get_logger().debug(f"clip peak {peak:.3f}")
    return tf.clip_by_value(x, -1.0, 1.0), lambda dy: dy * tf.cast(tf.abs(x) <= 1.0, dy.dtype)


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clipped(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
