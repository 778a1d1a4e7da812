"""The forward returns a dict; grad names its upstreams in insertion order, TF sends sorted keys.

Source: https://github.com/tensorflow/tensorflow/issues/58941
Bug: multiple outputs of a custom gradient (the report's question is which upstream is which).
With a dict of outputs, TF flattens by sorted key, so grad's (dshift, dscale), named in the
dict's insertion order, receive the upstreams of "scale" then "shift": silently swapped.
Expect: CG002
"""

import tensorflow as tf


@tf.custom_gradient
def affine_parts(x):
    out = {"shift": x + 1.0, "scale": 3.0 * x}

    def grad(dshift, dscale):
        return 3.0 * dscale + dshift

    return out, grad


def run_case():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = affine_parts(x)
        loss = 10.0 * out["scale"] + out["shift"]
    return tape.gradient(loss, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()


TRUTH = 31.0  # 10 * 3 + 1
