"""TensorFlow imported as tensorflow.compat.v2; the forward branches on a tensor.

Source: https://github.com/tensorflow/probability/issues/1138
Bug: TFP-style code imports `tensorflow.compat.v2 as tf`; the report hits "using a tf.Tensor as
a Python bool is not allowed". In a custom gradient the `if` on a tensor works eagerly and
raises under tf.function (AutoGraph does not convert custom-gradient bodies).
Expect: CG009
"""

import tensorflow.compat.v2 as tf


@tf.custom_gradient
def log1p_safe(x):
    y = tf.math.log1p(x)

    def grad(dy):
        if tf.reduce_any(x < -1.0):
            return tf.zeros_like(dy)
        return dy / (1.0 + x)

    return y, grad


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1p_safe(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
