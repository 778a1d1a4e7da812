"""grad formats the batch size with % and %d.

Source: https://github.com/tensorflow/tensorflow/issues/40916
Bug: as in the thread, code that treats a tensor as a Python number works eagerly and fails in
graph mode. `"%d" % n` with n a symbolic tensor raises TypeError "%d format: a real number is
required".
Expect: CG010
"""

import tensorflow as tf


@tf.custom_gradient
def mean_rows(x):
    n = tf.shape(x)[0]

    def grad(dy):
        tf.get_logger().debug("mean_rows backward over %d rows" % n)  # noqa: UP031 - the bug
        return tf.ones_like(x) * dy / tf.cast(n, x.dtype)

    return tf.reduce_mean(x, axis=0), grad


def run_case():
    x = tf.constant([[1.0], [3.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = mean_rows(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
