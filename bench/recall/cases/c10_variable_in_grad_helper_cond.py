"""grad reads a tf.Variable through a helper, and the custom gradient runs inside tf.cond.

Source: https://github.com/tensorflow/tensorflow/issues/50170
Bug: the report: a tf.Variable used inside grad of a custom gradient called in tf.cond under
tf.function fails when the gradient is taken ("Tensor.graph is undefined when eager execution is
enabled"). Here grad reads the variable through a module-level helper.
Expect: CG018
"""

import tensorflow as tf

w = tf.Variable(2.0, trainable=False)


def _times_w(g):
    return g * w


@tf.function
def test(x):
    @tf.custom_gradient
    def multiply_by_w(x):
        y = w * x

        def grad_fn(grad_y):
            return _times_w(grad_y)

        return y, grad_fn

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cond(tf.constant(True), lambda: multiply_by_w(x), lambda: x)
    return tape.gradient(y, x)


def run_case():
    return test.python_function(tf.constant(5.0))  # the same code, eagerly


def graph_check():  # as the report runs it
    return test(tf.constant(5.0))
