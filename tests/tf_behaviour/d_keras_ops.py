"""Issue 21 §4: ``keras.ops.custom_gradient`` on the TensorFlow backend, which grad signatures work
and what grad receives.

On the TF backend ``keras.ops.custom_gradient(f)`` is ``tf.custom_gradient(f=f)``
(``keras/src/backend/tensorflow/core.py``), so grad is called as TF calls it: one positional
upstream per output, plus ``variables=`` (a keyword) when f read a trainable variable. The Keras
docstring's portable form ``grad(*args, upstream=None)`` therefore gets the upstream in ``args``.
y = log(1 + e^x) at x = 0, whose gradient is 0.5; the grads return 10x that (5) so that plain
autodiff would show.
"""

from __future__ import annotations

from _harness import mark, num, row

import keras
import tensorflow as tf
from keras import ops

CALLS: list[str] = []


def received(args: tuple, kwargs: dict) -> None:
    CALLS.append(f"args={len(args)} positional, keywords={sorted(kwargs)}")


def gradients(cg, var: keras.Variable | None = None):
    """A function computing d cg(x) / d(x[, var]) at x = 0."""

    def compute():
        x = tf.constant(0.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = cg(x)
        return tape.gradient(y, [x] if var is None else [x, var.value])

    return compute


def two_ways(name: str, compute) -> None:
    def show(wrap):
        def thunk() -> str:
            CALLS.clear()
            got = num(wrap(compute)())
            return got + (f" (grad got {CALLS[0]})" if CALLS else "")
        return thunk

    row(name, show(lambda f: f), show(tf.function))


@ops.custom_gradient
def docstring_form(x):
    mark("f")
    e = ops.exp(x)

    def grad(*args, upstream=None):
        mark("grad")
        received(args, {"upstream": upstream} if upstream is not None else {})
        if upstream is None:
            (upstream,) = args
        return ops.multiply(upstream, 10.0 * (1.0 - 1.0 / ops.add(1, e)))

    return ops.log(1 + e), grad


@ops.custom_gradient
def upstream_only(x):
    mark("f")
    e = ops.exp(x)

    def grad(upstream):
        mark("grad")
        received((upstream,), {})
        return ops.multiply(upstream, 10.0 * (1.0 - 1.0 / ops.add(1, e)))

    return ops.log(1 + e), grad


@ops.custom_gradient
def dy_variables(x):
    mark("f")
    e = ops.exp(x)

    def grad(dy, variables=None):
        mark("grad")
        received((dy,), {} if variables is None else {"variables": variables})
        return ops.multiply(dy, 10.0 * (1.0 - 1.0 / ops.add(1, e)))

    return ops.log(1 + e), grad


@ops.custom_gradient
def torch_form(x):
    mark("f")
    e = ops.exp(x)

    def grad(*args, upstream):
        mark("grad")
        received(args, {"upstream": upstream})
        return ops.multiply(upstream, 10.0 * (1.0 - 1.0 / ops.add(1, e)))

    return ops.log(1 + e), grad

w = keras.Variable(1.0, name="w")


@ops.custom_gradient
def reads_var_docstring_form(x):
    mark("f")
    y = x * w

    def grad(*args, upstream=None):
        mark("grad")
        if upstream is None:
            (upstream,) = args
        return upstream * w * 10.0

    return y, grad


@ops.custom_gradient
def reads_var_kwargs(x):
    mark("f")
    y = x * w

    def grad(*args, upstream=None, **kwargs):
        mark("grad")
        received(args, {**kwargs, **({"upstream": upstream} if upstream is not None else {})})
        if upstream is None:
            (upstream,) = args
        return upstream * w * 10.0, [upstream * x * 10.0 for _ in kwargs.get("variables", [])]

    return y, grad


def main() -> None:
    row("keras.ops.custom_gradient is tf.custom_gradient",
        lambda: f"type {type(docstring_form).__module__}.{type(docstring_form).__name__}", None)
    for name, cg in (("grad(*args, upstream=None) [docstring form; want 5]", docstring_form),
                     ("grad(upstream) [want 5]", upstream_only),
                     ("grad(dy, variables=None), no variable read [want 5]", dy_variables),
                     ("grad(*args, upstream) [PyTorch form]", torch_form)):
        two_ways(name, gradients(cg))
    two_ways("f reads a keras.Variable, grad(*args, upstream=None)", gradients(reads_var_docstring_form, w))
    two_ways("f reads a keras.Variable, grad(*args, upstream=None, **kwargs) [want x,w = 10,0]",
             gradients(reads_var_kwargs, w))


if __name__ == "__main__":
    main()
