"""Issue 22 §4-§5: what TF does with a NumPy kernel's dtype, a Python kernel's static shape, a
Keras 3 weight passed in as an input, and variable gradients looked up by a weight's name.

Each scenario runs eagerly and inside tf.function (one trace). The kernels are NumPy functions
under ``tf.numpy_function``/``tf.py_function``; the layers are Keras 3 layers on the TF backend.
"""

from __future__ import annotations

from _harness import mark, num, row

import keras
import numpy as np
import tensorflow as tf

X = tf.constant([[1.0, 2.0], [3.0, 4.0]])


def modes(name: str, compute, show=num) -> None:
    """``compute`` eagerly and as one tf.function trace; its result is shown outside the trace."""
    row(name, lambda: show(compute()), lambda: show(tf.function(compute)()))


def text(value) -> str:
    """A Python string a scenario computed while tracing (tf.function returns it as bytes)."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return value.decode() if isinstance(value, bytes) else str(value)


def numpy_call(kernel, tout=tf.float32, wrapper=tf.numpy_function):
    def run():
        out = wrapper(kernel, [X], tout)
        return out.dtype.name, tf.reduce_sum(tf.cast(out, tf.float32))
    return run


def dtype_and_sum(pair) -> str:
    return f"{text(pair[0])} {num(pair[1])}"


# -- §4a: the kernel's dtype against Tout ---------------------------------------------------------
for name, kernel in [
    ("a * 0.5 (Python float: weak)", lambda a: a * 0.5),
    ("np.zeros(a.shape) (no dtype)", lambda a: np.zeros(a.shape)),
    ("a + np.random.normal(size=a.shape)", lambda a: a + np.random.normal(size=a.shape) * 0),
    ("a * np.float64(0.5) (NumPy scalar: strong)", lambda a: a * np.float64(0.5)),
    ("a * np.array(0.5) (0-d array: strong)", lambda a: a * np.array(0.5)),
    ("np.float32(2.0) * 2.0", lambda a: np.float32(2.0) * 2.0),
    ("a bare Python float (1.0)", lambda a: 1.0),
]:
    modes(f"numpy_function, Tout=float32, kernel returns {name}", numpy_call(kernel), dtype_and_sum)
modes("py_function, Tout=float32, kernel returns np.zeros (float64)",
      numpy_call(lambda a: np.zeros(a.shape), wrapper=tf.py_function), dtype_and_sum)


# -- §4b: the static shape of a Python kernel's result -------------------------------------------
def static_shape(use):
    def run() -> str:
        y = tf.numpy_function(lambda a: a * 2, [X], tf.float32)
        return f"shape={y.shape} {use(y)}"  # a string made while tracing: what Python saw
    return run


for name, use in [
    ("y.shape[1] (asked)", lambda y: y.shape[1]),
    ("y.shape[1] + 1", lambda y: y.shape[1] + 1),
    ("tf.reshape(y, [-1, y.shape[-1]])", lambda y: tf.reshape(y, [-1, y.shape[-1]]).shape),
    ("y.shape.as_list()", lambda y: y.shape.as_list()),
    ("len(y.shape)", lambda y: len(y.shape)),
    ("y.shape.rank", lambda y: y.shape.rank),
    ("a, b = y.shape", lambda y: tuple(y.shape)),
    ("after y.set_shape(X.shape): y.shape[1] + 1", lambda y: (y.set_shape(X.shape), y.shape[1] + 1)[1]),
]:
    modes(f"numpy_function result: {name}", static_shape(use), text)


@tf.custom_gradient
def kernel_output(v):
    mark("f")
    y = tf.numpy_function(lambda a: a * 2, [v], tf.float32)

    def grad(dy):
        mark("grad")
        return dy * 2.0 * tf.ones([dy.shape[0], dy.shape[1]])
    return y, grad


def upstream_shape(set_shape: bool):
    def run():
        with tf.GradientTape() as tape:
            tape.watch(X)
            out = kernel_output(X)
            if set_shape:
                out.set_shape(X.shape)
            loss = tf.reduce_sum(out)
        return tape.gradient(loss, X)
    return run


modes("grad's upstream of a numpy_function output: dy.shape[0] in tf.ones", upstream_shape(False))
modes("same, the caller sets the output's shape", upstream_shape(True))


# -- §5: Keras 3 weights -------------------------------------------------------------------------
class Positional(keras.layers.Layer):
    def build(self, shape):
        self.k = self.add_weight(shape=(), initializer="ones", name="k")
        self.t = tf.Variable(1.0, name="t")  # a tf.Variable assigned to a Keras 3 layer

    def call(self, x, which="k"):
        @tf.custom_gradient
        def f(v, k):
            mark("f")
            return v * k, lambda dy: (dy * k, tf.reduce_sum(dy * v))
        return f(x, self.k if which == "k" else self.t)


positional = Positional()
positional.build(())
print(f"type of add_weight's result: {type(positional.k).__module__}.{type(positional.k).__name__}, "
      f"a tf.Variable: {isinstance(positional.k, tf.Variable)}; self.t stays "
      f"{type(positional.t).__name__}", flush=True)


def through_layer(which: str):
    def run():
        with tf.GradientTape() as tape:
            tape.watch(X)
            loss = tf.reduce_sum(positional(X, which=which))
        return tape.gradient(loss, X)[0]
    return run


modes("Keras 3 weight (add_weight) passed positionally, grad without variables", through_layer("k"))
modes("tf.Variable on a Keras 3 layer passed positionally", through_layer("t"))


class ByName(keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(shape=(), initializer="ones", name="kernel")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            mark("f")

            def grad(dy, variables=None):
                mark("grad")
                print(f"  grad got variables named {[u.name for u in variables]} "
                      f"(the Keras weight's .name is {self.kernel.name!r})", flush=True)
                by_name = {"kernel": tf.reduce_sum(dy * v)}
                return dy * self.kernel, [by_name[u.name] for u in variables]
            return v * self.kernel, grad
        return f(x)


by_name = ByName(name="by_name")
by_name.build(())


def variable_grads():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(by_name(X))
    return tape.gradient(loss, by_name.trainable_variables)


modes("variable gradients looked up by the weight's short name", variable_grads)
