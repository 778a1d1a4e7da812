"""Repro for docs/triage.md: the NaN/Inf gradients runtime-check first reported in TensorFlow
Probability, each checked through TFP's public API, eagerly and under tf.function, next to the
forward's one-sided difference quotients (float64, steps 1e-4 to the right and to the left).

A NaN gradient is a defect where the forward has a derivative (both quotients agree): bessel_ive
at z = 0 for an order v >= 1. It is not one at a kink (v = 0: the quotients are
-1 and +1), at the edge of the domain (igammainv with a = 0: the forward is NaN for every p
beside 0) or for a sampler's parameter outside its domain (the public sampler keeps it inside).
"""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import tensorflow as tf
import tensorflow_probability as tfp


def gradients(fn, args, wrt):
    def run(*xs):
        with tf.GradientTape() as tape:
            tape.watch(xs[wrt])
            y = fn(*xs)
        return tape.gradient(y, xs[wrt])

    xs = [tf.constant(x, tf.float32) for x in args]
    return float(run(*xs)), float(tf.function(run)(*xs))


def quotients(fn, args, wrt, h=1e-4):
    base = float(fn(*[tf.constant(x, tf.float64) for x in args]))
    out = []
    for side in (h, -h):
        moved = [x + side if i == wrt else x for i, x in enumerate(args)]
        out.append((float(fn(*[tf.constant(x, tf.float64) for x in moved])) - base) / side)
    return out


def two_piece_normal_sample(skewness):
    return tfp.distributions.TwoPieceNormal(0.0, 1.0, skewness).sample(seed=(1, 2))


CASES = [
    ("bessel_ive(v=1, z=0)      d/dz", tfp.math.bessel_ive, [1.0, 0.0], 1),
    ("bessel_ive(v=2, z=0)      d/dz", tfp.math.bessel_ive, [2.0, 0.0], 1),
    ("bessel_ive(v=0, z=0)      d/dz", tfp.math.bessel_ive, [0.0, 0.0], 1),
    ("log_bessel_ive(v=0, z=0)  d/dz", tfp.math.log_bessel_ive, [0.0, 0.0], 1),
    ("igammainv(a=0, p=0)       d/da", tfp.math.igammainv, [0.0, 0.0], 0),
    ("igammainv(a=0, p=0)       d/dp", tfp.math.igammainv, [0.0, 0.0], 1),
    ("TwoPieceNormal(skewness=-100).sample d/dskewness", two_piece_normal_sample, [-100.0], 0),
]

for label, fn, args, wrt in CASES:
    eager, traced = gradients(fn, args, wrt)
    right, left = quotients(fn, args, wrt)
    print(f"{label:50s} eager {eager:<10.4g} tf.function {traced:<10.4g} quotients {right:.4g} / {left:.4g}")
