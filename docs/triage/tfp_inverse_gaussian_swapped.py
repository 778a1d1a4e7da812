"""Repro for docs/triage.md: TFP's Inverse Gaussian sampler swaps the gradients of `loc` and
`concentration` when the two have the same shape.

The mean of InverseGaussian(loc, concentration) is `loc`, so the gradient of a large sample's mean
is 1 with respect to `loc` and 0 with respect to `concentration` (reparameterization gradients are
unbiased). `_random_inverse_gaussian_bwd` returns `grad_concentration, grad_loc` when the static
shapes are equal and `grad_loc, grad_concentration` otherwise.
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tensorflow as tf
import tensorflow_probability as tfp


def mean_gradients(loc, concentration):
    with tf.GradientTape() as tape:
        tape.watch([loc, concentration])
        mean = tf.reduce_mean(tfp.distributions.InverseGaussian(loc, concentration).sample(50000, seed=(1, 2)))
    d_loc, d_concentration = tape.gradient(mean, [loc, concentration])
    return float(tf.reduce_sum(d_loc)), float(tf.reduce_sum(d_concentration))


for label, concentration in (("same shape ", tf.constant([3.0, 3.0])), ("broadcast  ", tf.constant(3.0))):
    loc = tf.constant([2.0, 2.0])
    eager = mean_gradients(loc, concentration)
    traced = tf.function(mean_gradients)(loc, concentration)
    print(f"{label} eager d/dloc {eager[0]:.3f} d/dconcentration {eager[1]:.3f}   "
          f"tf.function d/dloc {float(traced[0]):.3f} d/dconcentration {float(traced[1]):.3f}")
