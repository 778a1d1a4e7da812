"""Issue 21 §1, contexts 7 and 9: a custom gradient with a tensor ``if`` in f or in grad, run
through ``tf.data.Dataset.map``, ``tf.py_function`` inside a tf.function,
``tf.config.run_functions_eagerly(True)``, and as a method of a ``tf.Module``.

``traced`` is the scenario inside ``tf.function`` (for ``Dataset.map``: the map function, which
tf.data always traces, so ``eager`` is n/a).
"""

# statement-form `if` on a tensor is what is under test
# ruff: noqa: SIM108

from __future__ import annotations

from _harness import at_points, both, mark, num, row, scalar_function, tape_value

import tensorflow as tf


@tf.custom_gradient
def if_in_f(x):
    mark("f")
    if x > 0:
        y = x * 2.0
    else:
        y = x * -3.0

    def grad(dy):
        mark("grad")
        return dy * tf.where(x > 0, 20.0, -30.0)

    return y, grad


@tf.custom_gradient
def if_in_grad(x):
    mark("f")
    y = tf.where(x > 0, x * 2.0, x * -3.0)

    def grad(dy):
        mark("grad")
        if x > 0:
            return dy * 20.0
        return dy * -30.0

    return y, grad


CGS = {"if t in f": if_in_f, "if t in grad": if_in_grad}


def nested(body: str):
    """A run function that defines the custom gradient itself (body: "f" or "grad")."""

    def run(x):
        @tf.custom_gradient
        def cg(x):
            mark("f")
            if body == "f" and x > 0:
                y = x * 2.0
            elif body == "f":
                y = x * -3.0
            else:
                y = tf.where(x > 0, x * 2.0, x * -3.0)

            def grad(dy):
                mark("grad")
                if body == "grad" and x > 0:
                    g = dy * 20.0
                elif body == "grad":
                    g = dy * -30.0
                else:
                    g = dy * tf.where(x > 0, 20.0, -30.0)
                return g

            return y, grad

        return tape_value(cg, x)

    return run


def dataset_map(run) -> str:
    ds = tf.data.Dataset.from_tensor_slices([2.0, -3.0]).map(run)
    pairs = list(ds)
    return at_points(lambda x: pairs[0] if float(x) > 0 else pairs[1])


def py_function_inside(cg):
    """The tape and the custom gradient both inside tf.py_function."""

    def run(x):
        y, g = tf.py_function(lambda v: tape_value(cg, v), [x], [tf.float32, tf.float32])
        return tf.reshape(y, []), tf.reshape(g, [])

    return run


def py_function_tape_outside(cg):
    """Only the custom gradient inside tf.py_function; the tape around it, gradient through it."""

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reshape(tf.py_function(cg, [x], tf.float32), [])
        return y, tape.gradient(y, x)

    return run


class Mod(tf.Module):
    @tf.custom_gradient
    def if_in_f(self, x):
        mark("f")
        if x > 0:
            y = x * 2.0
        else:
            y = x * -3.0

        def grad(dy):
            mark("grad")
            return dy * tf.where(x > 0, 20.0, -30.0)

        return y, grad

    @tf.custom_gradient
    def if_in_grad(self, x):
        mark("f")
        y = tf.where(x > 0, x * 2.0, x * -3.0)

        def grad(dy):
            mark("grad")
            if x > 0:
                return dy * 20.0
            return dy * -30.0

        return y, grad

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def via_tf_function_method(self, x):
        return tape_value(self.if_in_f, x)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def nested_in_tf_function_method(self, x):
        @tf.custom_gradient
        def cg(x):
            mark("f")
            if x > 0:
                y = x * 2.0
            else:
                y = x * -3.0

            def grad(dy):
                mark("grad")
                if x > 0:
                    return dy * 20.0
                return dy * -30.0

            return y, grad

        return tape_value(cg, x)


@tf.custom_gradient
def plain_cg(x):
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 20.0

    return x * 2.0, grad


class Plain:
    @tf.custom_gradient
    def cg(self, x):
        mark("f")

        def grad(dy):
            mark("grad")
            return dy * 20.0

        return x * 2.0, grad


def takes_cg(x, cg):
    """d cg(x) / dx at x (20 when the custom gradient is used)."""
    return tape_value(cg, x)[1]


def main() -> None:
    for name, cg in CGS.items():
        row(f"Dataset.map, module-level | {name}", None,
            lambda cg=cg: dataset_map(lambda x: tape_value(cg, x)))
    for body in ("f", "grad"):
        row(f"Dataset.map, defined in the map function | if t in {body}", None,
            lambda body=body: dataset_map(nested(body)))
    for name, cg in CGS.items():
        both(f"tf.py_function, tape inside | {name}", py_function_inside(cg))
        both(f"tf.py_function, tape outside | {name}", py_function_tape_outside(cg))
    tf.config.run_functions_eagerly(True)
    try:
        for name, cg in CGS.items():
            row(f"run_functions_eagerly(True) | {name}", None,
                lambda cg=cg: at_points(scalar_function(lambda x: tape_value(cg, x))))
    finally:
        tf.config.run_functions_eagerly(False)
    mod = Mod()
    both("tf.Module method, obj.method(x) | if t in f", lambda x: tape_value(mod.if_in_f, x))
    both("tf.Module method, obj.method(x) | if t in grad", lambda x: tape_value(mod.if_in_grad, x))
    row("tf.Module method, called from a @tf.function method | if t in f", None,
        lambda: at_points(mod.via_tf_function_method))
    row("tf.Module, defined inside a @tf.function method | if t in f and grad", None,
        lambda: at_points(mod.nested_in_tf_function_method))
    # the custom-gradient function itself handed to tf.function as an argument
    for name, cg in (("module-level function", plain_cg), ("bound method", Plain().cg)):
        row(f"passed as an argument of the tf.function | {name}", lambda cg=cg: num(takes_cg(tf.constant(2.0), cg)),
            lambda cg=cg: num(tf.function(takes_cg)(tf.constant(2.0), cg)))
        row(f"passed as an argument of the tf.function(autograph=False) | {name}", None,
            lambda cg=cg: num(tf.function(takes_cg, autograph=False)(tf.constant(2.0), cg)))


if __name__ == "__main__":
    main()
