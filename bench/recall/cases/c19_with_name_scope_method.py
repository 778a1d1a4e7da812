"""A tf.Module method carries with_name_scope above tf.custom_gradient and is called on self.

Source: https://github.com/tensorflow/tensorflow/issues/37912
Bug: the report decorates Module methods with @tf.Module.with_name_scope. Stacked above
@tf.custom_gradient on a method, the custom gradient receives `self` as its first positional
input; TF tries to convert the module to a tensor and raises.
Expect: CG014
"""

import tensorflow as tf


class Clip(tf.Module):
    def __init__(self, bound):
        super().__init__(name="clip")
        self.bound = bound

    @tf.Module.with_name_scope
    @tf.custom_gradient
    def __call__(self, x):
        y = tf.clip_by_value(x, -self.bound, self.bound)
        return y, lambda dy: dy


CLIP = Clip(1.0)


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = CLIP(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
