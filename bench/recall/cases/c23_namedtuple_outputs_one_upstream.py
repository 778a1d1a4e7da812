"""The forward returns a namedtuple of two outputs; grad takes a single upstream.

Source: https://github.com/tensorflow/tensorflow/issues/55296
Bug: the report's custom gradient returns a tuple of outputs (`(var, y)`) and unpacks upstreams
in grad. TF flattens a namedtuple of outputs too and calls grad with one upstream per leaf; a
grad with one parameter raises TypeError (2 positional arguments given).
Expect: CG002
"""

import collections

import tensorflow as tf

MeanVar = collections.namedtuple("MeanVar", ["mean", "var"])


@tf.custom_gradient
def moments(x):
    mean = tf.reduce_mean(x)
    var = tf.reduce_mean(tf.square(x - mean))

    def grad(dmean):
        n = tf.cast(tf.size(x), x.dtype)
        return dmean * tf.ones_like(x) / n

    return MeanVar(mean, var), grad


def run_case():
    x = tf.constant([1.0, 2.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = moments(x)
        loss = out.mean + out.var
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
