"""Repro for docs/triage.md: TensorFlow Quantum's cirq_sample (tensorflow_quantum/core/ops/cirq_ops.py,
0.7.6) calls int() and .numpy() on tensors in a custom gradient, and works under tf.function,
because its only caller runs it through tf.py_function (always eager).

The structure is TFQ's (a factory defining the custom gradient and the py_function wrapper); the
circuit simulation is replaced by NumPy arithmetic on the same inputs.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np
import tensorflow as tf


def _get_cirq_samples():
    @tf.custom_gradient
    def cirq_sample(values, num_samples):
        def _no_grad(grad):
            raise RuntimeError("Differentiation through a sampling operation is not supported.")

        if not (int(tf.size(num_samples)) == 1):
            raise ValueError("num_samples tensor must have size 1")
        num_samples = int(num_samples.numpy())
        return np.repeat(values.numpy()[:, None], num_samples, axis=1).astype(np.float32), _no_grad

    def sample_generator(values, num_samples):
        out = tf.py_function(func=cirq_sample, inp=[tf.stop_gradient(values), tf.stop_gradient(num_samples)],
                             Tout=tf.float32)
        out.set_shape([None, None])
        return out

    return sample_generator


sample = _get_cirq_samples()
values, n = tf.constant([0.5, 1.5]), tf.constant(3)  # a scalar: see docs/triage.md for [3]


def run():
    return sample(values, n)


for mode, fn in [("eager", run), ("tf.function", tf.function(run))]:
    try:
        print(f"{mode:12} OK shape", fn().shape.as_list())
    except Exception as e:
        print(f"{mode:12} RAISES {type(e).__name__}: {str(e).strip().splitlines()[-1][:150]}")
