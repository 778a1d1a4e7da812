"""The forward returns what a finishing helper returns: the outputs without the grad.

Source: https://github.com/tensorflow/tensorflow/issues/21756
Bug: the thread is about what a custom-gradient function must return, (outputs, grad_fn). Here
the forward's last step moved into a helper that returns only the outputs; TF unpacks that
tensor as the pair and raises (too many values to unpack eagerly, iterating a symbolic tensor
under tf.function).
Expect: CG001
"""

import tensorflow as tf


def _finish(y):
    return tf.identity(y, name="scaled")


@tf.custom_gradient
def scaled(x):
    def grad(dy):
        return dy * 3.0

    return _finish(x * 3.0)


def run_case():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as a training step runs it
    return tf.function(run_case)()
