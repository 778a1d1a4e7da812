"""Repro for docs/triage.md: Keras's float8 Dense/EinsumDense fail to differentiate eagerly."""
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
os.environ["KERAS_BACKEND"] = "tensorflow"

import keras
import numpy as np
import tensorflow as tf


keras.utils.set_random_seed(0)


def quantized(make):
    layer = make()
    layer(tf.zeros((2, 4)))  # built
    layer.quantize("float8")
    return layer


def grads(layer):
    x = tf.constant(np.linspace(-1.0, 1.0, 8, dtype="float32").reshape(2, 4))

    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
        return tape.gradient(y, x)
    return run


def fit(run_eagerly):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.quantize("float8")
    model.compile("sgd", "mse", run_eagerly=run_eagerly)
    history = model.fit(np.ones((8, 4), "float32"), np.ones((8, 3), "float32"), epochs=1, verbose=0)
    return f"loss {history.history['loss'][0]:.3f}"


layers = [("Dense(3)", lambda: keras.layers.Dense(3)),
          ("EinsumDense('ab,bc->ac')",
           lambda: keras.layers.EinsumDense("ab,bc->ac", output_shape=3))]
for label, make in layers:
    for mode in ("eager", "tf.function"):
        run = grads(quantized(make))
        try:
            result = run() if mode == "eager" else tf.function(run)()
            print(f"{label:25} {mode:12} OK gradient shape {tuple(result.shape)}")
        except Exception as e:
            last = str(e).strip().splitlines()[-1][:100]
            print(f"{label:25} {mode:12} RAISES {type(e).__name__}: {last}")
for run_eagerly in (True, False):
    try:
        print(f"{'fit(run_eagerly=' + str(run_eagerly) + ')':38} OK {fit(run_eagerly)}")
    except Exception as e:
        print(f"{'fit(run_eagerly=' + str(run_eagerly) + ')':38} RAISES {type(e).__name__}: "
              f"{str(e).strip().splitlines()[-1][:100]}")
