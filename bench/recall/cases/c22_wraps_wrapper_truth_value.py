"""A functools.wraps wrapper around a custom gradient whose forward tests a tensor with `if`.

Source: https://github.com/tensorflow/tensorflow/issues/40143
Bug: Python `if` on a tensor works eagerly and raises OperatorNotAllowedInGraphError in graph
mode (the report). AutoGraph does not convert custom-gradient bodies, so under tf.function the
`if` below raises too, though the custom gradient sits under a logging wrapper.
Expect: CG009
"""

import functools

import tensorflow as tf


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        tf.get_logger().debug("calling %s", fn.__name__)
        return fn(*args)

    return wrapper


@logged
@tf.custom_gradient
def safe_log(x):
    if tf.reduce_min(x) <= 0.0:
        x = tf.maximum(x, 1e-6)
    return tf.math.log(x), lambda dy: dy / x


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = safe_log(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
