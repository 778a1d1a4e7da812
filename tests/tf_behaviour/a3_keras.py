"""Issue 21 §1, contexts 3, 4, 6 and 9 under Keras 3: a custom gradient with a tensor ``if`` in f or
in grad, placed

- ``defined in Layer.call`` (context 3),
- ``module-level, called from Layer.call`` (context 6),
- ``Layer method, called from call`` (context 9),
- ``defined in Model.train_step`` (context 4, a custom train_step run by fit),

and run by ``fit`` and ``predict`` (``traced``: the default; ``eager``: ``run_eagerly=True``), and
by a custom training loop (``traced``: its step in a ``tf.function``; ``eager``: the step called
as it is).

The model is one scalar weight ``w`` (initially 1), ``u = w * x``, the output is the custom
gradient of ``u`` (2u / -3u, gradient 20 / -30 as in the other scripts), the loss is its mean,
SGD with learning rate 0.01, two steps on x = 1 then x = -1. Right: ``w=0.5``; a grad branch
frozen at its first value: ``w=1``; plain autodiff instead of the custom gradient: ``w=0.95``.
"""

# statement-form `if` on a tensor is what is under test
# ruff: noqa: SIM108

from __future__ import annotations

import numpy as np
from _harness import line, mark, outcome

import keras
import tensorflow as tf

USE = {"body": "f"}
X = np.array([[1.0], [-1.0]], dtype="float32")
Y = np.zeros((2, 1), dtype="float32")


@tf.custom_gradient
def module_cg(u):
    mark("f")
    if USE["body"] == "f":
        if tf.reduce_sum(u) > 0:
            y = u * 2.0
        else:
            y = u * -3.0
    else:
        y = tf.where(u > 0, u * 2.0, u * -3.0)

    def grad(dy):
        mark("grad")
        if USE["body"] == "grad":
            if tf.reduce_sum(u) > 0:
                return dy * 20.0
            return dy * -30.0
        return dy * tf.where(u > 0, 20.0, -30.0)

    return y, grad


class Scale(keras.layers.Layer):
    def __init__(self, place: str) -> None:
        super().__init__()
        self.place = place

    def build(self, input_shape) -> None:
        self.w = self.add_weight(shape=(), initializer="ones", name="w")

    @tf.custom_gradient
    def method_cg(self, u):
        mark("f")
        if USE["body"] == "f":
            if tf.reduce_sum(u) > 0:
                y = u * 2.0
            else:
                y = u * -3.0
        else:
            y = tf.where(u > 0, u * 2.0, u * -3.0)

        def grad(dy):
            mark("grad")
            if USE["body"] == "grad":
                if tf.reduce_sum(u) > 0:
                    return dy * 20.0
                return dy * -30.0
            return dy * tf.where(u > 0, 20.0, -30.0)

        return y, grad

    def call(self, x):
        u = x * self.w
        if self.place == "module-level, called from Layer.call":
            return module_cg(u)
        if self.place == "Layer method, called from call":
            return self.method_cg(u)
        if self.place == "defined in Model.train_step":
            return u

        @tf.custom_gradient
        def cg(u):
            mark("f")
            if USE["body"] == "f":
                if tf.reduce_sum(u) > 0:
                    y = u * 2.0
                else:
                    y = u * -3.0
            else:
                y = tf.where(u > 0, u * 2.0, u * -3.0)

            def grad(dy):
                mark("grad")
                if USE["body"] == "grad":
                    if tf.reduce_sum(u) > 0:
                        return dy * 20.0
                    return dy * -30.0
                return dy * tf.where(u > 0, 20.0, -30.0)

            return y, grad

        return cg(u)


class Plain(keras.Model):
    def __init__(self, place: str) -> None:
        super().__init__()
        self.scale = Scale(place)

    def call(self, x):
        return self.scale(x)


class StepModel(Plain):
    """train_step applies a custom gradient it defines to the layer's output u."""

    def train_step(self, data):
        x, _ = data

        @tf.custom_gradient
        def cg(u):
            mark("f")
            if USE["body"] == "f":
                if tf.reduce_sum(u) > 0:
                    y = u * 2.0
                else:
                    y = u * -3.0
            else:
                y = tf.where(u > 0, u * 2.0, u * -3.0)

            def grad(dy):
                mark("grad")
                if USE["body"] == "grad":
                    if tf.reduce_sum(u) > 0:
                        return dy * 20.0
                    return dy * -30.0
                return dy * tf.where(u > 0, 20.0, -30.0)

            return y, grad

        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(cg(self(x)))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def fit(place: str, run_eagerly: bool) -> str:
    model = (StepModel if place == "defined in Model.train_step" else Plain)(place)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=lambda y_true, y_pred: tf.reduce_mean(y_pred),
                  run_eagerly=run_eagerly)
    model.fit(X, Y, batch_size=1, epochs=1, shuffle=False, verbose=0)
    return f"w={float(model.scale.w.numpy()):.6g}"


def predict(place: str, run_eagerly: bool) -> str:
    model = Plain(place)
    model.compile(loss="mse", run_eagerly=run_eagerly)
    out = model.predict(X, batch_size=1, verbose=0)
    return "y=" + ",".join(f"{v:.6g}" for v in out.ravel())


def custom_loop(place: str, traced: bool) -> str:
    model = Plain(place)
    opt = keras.optimizers.SGD(0.01)

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    run = tf.function(step) if traced else step
    for i in range(2):
        run(X[i:i + 1])
    return f"w={float(model.scale.w.numpy()):.6g}"


PLACES = ("defined in Layer.call", "module-level, called from Layer.call", "Layer method, called from call",
          "defined in Model.train_step")


def main() -> None:
    for place in PLACES:
        for body in ("f", "grad"):
            USE["body"] = body
            name = f"{place} | if t in {body}"
            line(f"fit: {name}", outcome(lambda place=place: fit(place, True)),
                 outcome(lambda place=place: fit(place, False)))
    for place in PLACES[:3]:
        USE["body"] = "f"
        line(f"predict: {place} | if t in f",
             outcome(lambda place=place: predict(place, True)), outcome(lambda place=place: predict(place, False)))
        for body in ("f", "grad"):
            USE["body"] = body
            line(f"custom loop, step in tf.function: {place} | if t in {body}",
                 outcome(lambda place=place: custom_loop(place, False)),
                 outcome(lambda place=place: custom_loop(place, True)))


if __name__ == "__main__":
    main()
