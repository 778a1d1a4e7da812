"""A subclass calls a custom-gradient method of its base as Base.method(self, x).

Source: https://github.com/tensorflow/tensorflow/issues/39996
Bug: the report builds gradients through methods of tf.Module subclasses. A custom gradient
defined as a method and reached as `Base.method(self, x)` gets `self` as a positional input of
the custom gradient, which TF converts to a tensor and fails on.
Expect: CG014
"""

import tensorflow as tf


class Base(tf.Module):
    @tf.custom_gradient
    def squash(self, x):
        y = tf.tanh(x)
        return y, lambda dy: dy * (1.0 - y * y)


class Child(Base):
    def __call__(self, x):
        return Base.squash(self, x) * 2.0


CHILD = Child()


def run_case():
    x = tf.constant([0.5, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = CHILD(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
