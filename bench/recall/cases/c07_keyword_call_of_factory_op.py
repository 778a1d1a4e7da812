"""A custom gradient returned by a factory is called with keyword arguments.

Source: https://github.com/tensorflow/tensorflow/issues/65839
Bug: the report: calling a custom gradient with keyword arguments silently drops the custom
gradient eagerly (all keywords) and raises under tf.function. Here the custom gradient comes
from a factory, `op = make_loss(); op(x=..., y=...)`.
Expect: CG008
"""

import tensorflow as tf


def make_loss(weight):
    @tf.custom_gradient
    def loss(x, y):
        def grad(upstream):
            return upstream * weight * 2.0 * (x - y), -upstream * 2.0 * (x - y)

        return tf.reduce_sum(tf.square(x - y)), grad

    return loss


def run_case():
    x = tf.constant([4.0, 5.0])
    y = tf.constant([5.0, 7.0])
    op = make_loss(1000.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = op(x=x, y=y)
    return tape.gradient(z, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()


TRUTH = [-2000.0, -4000.0]  # the custom gradient, 1000 times d/dx
