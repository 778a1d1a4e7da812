"""Repro for docs/triage.md: TFP's internal custom_gradient forwards **kwargs into tf.custom_gradient."""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tensorflow as tf
from tensorflow_probability.python.internal import custom_gradient as tfp_custom_gradient


def _fwd(x, scale):
    return x * scale, (x, scale)


def _bwd(aux, g):
    x, scale = aux
    return g * scale, g * x


@tfp_custom_gradient.custom_gradient(vjp_fwd=_fwd, vjp_bwd=_bwd)
def scaled(x, scale):
    return x * scale


x, s = tf.constant(2.0), tf.constant(3.0)


def grads(call):
    def run():
        with tf.GradientTape() as tape:
            tape.watch([x, s])
            y = call()
        return tape.gradient(y, [x, s])
    return run


def positional():
    return scaled(x, s)


def keyword():
    return scaled(x, scale=s)


for label, call in [("positional", positional), ("keyword scale=", keyword)]:
    for mode, fn in [("eager", grads(call)), ("tf.function", tf.function(grads(call)))]:
        try:
            print(f"{label:15} {mode:12} OK", [g.numpy() if g is not None else None for g in fn()])
        except Exception as e:
            print(f"{label:15} {mode:12} RAISES {type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}")
