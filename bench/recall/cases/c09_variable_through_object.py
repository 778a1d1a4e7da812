"""The forward reads a variable through an object; grad does not take `variables`.

Source: https://github.com/tensorflow/tensorflow/issues/31945
Bug: the report: a custom gradient whose forward uses a variable created outside raises "grad_fn
must accept a keyword argument 'variables'". Here the variable is reached through an attribute of
a plain object the module holds.
Expect: CG004
"""

import tensorflow as tf


class Params:
    def __init__(self):
        self.scale = tf.Variable(2.0, name="scale")


PARAMS = Params()


@tf.custom_gradient
def scaled(x):
    s = tf.convert_to_tensor(PARAMS.scale)
    y = x * s

    def grad(dy):
        return dy * s

    return y, grad


def run_case():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
