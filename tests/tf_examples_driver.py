"""Run the rule examples that carry a ``# tf:`` line with TensorFlow, eagerly and under tf.function.

A ``# tf:`` line says how to exercise the example: a Python expression, evaluated in the
example's module, that gives a thunk (``grad(f, [1.0, 2.0])`` takes the gradient of ``f`` at those
inputs; ``call(f, ...)`` only calls it; ``var_grads(f, x, [w, b])`` takes the gradients of the
variables ``w`` and ``b``). The driver runs each thunk eagerly and inside ``tf.function`` and
prints the outcomes as JSON; ``tests/test_examples_tf.py`` checks them against the ``=>`` part of
the line. Used in one subprocess, so TensorFlow is imported once and never in the linter's process.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from tf_examples import examples  # noqa: E402
from tf_outcome import outcome  # noqa: E402

_MODULES = tempfile.mkdtemp(prefix="cg_tf_examples_")
sys.path.insert(0, _MODULES)


def _tensors(values):
    """Lists and floats become tensors; Python ints and bools stay Python values, as a caller's
    configuration would (TF converts them itself, differently in each mode)."""
    return [v if isinstance(v, (tf.Variable, int)) else tf.constant(v) for v in values]


def grad(fn, *values):
    """d sum(fn(*inputs)) / d the tensor inputs. The inputs are made outside the thunk: under
    tf.function they are captured, not constants (Grappler folding a constant non-scalar tf.cond
    predicate aborts the process instead of raising)."""
    return _gradient(fn, None, values)


def grad_scaled(fn, scale, *values):
    """d (scale * sum(fn(*inputs))) / d the tensor inputs: a loss that is not the plain sum, so
    the upstream grad receives is not ones."""
    return _gradient(fn, scale, values)


def _gradient(fn, scale, values):
    args = _tensors(values)

    def run():
        watched = [a for a in args if tf.is_tensor(a)]
        with tf.GradientTape() as tape:
            for a in watched:
                tape.watch(a)
            out = fn(*args)
            loss = tf.add_n([tf.reduce_sum(o) for o in tf.nest.flatten(out)])
            if scale is not None:
                loss = scale * loss
        return tape.gradient(loss, watched)
    return run


def call(fn, *values):
    args = _tensors(values)
    return lambda: fn(*args)


def var_grads(fn, value, variables):
    """d sum(fn(value)) / d variables."""
    x = tf.constant(value)

    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(fn(x))
        return tape.gradient(loss, variables)
    return run


def in_cond(fn, *values):
    """The gradient of ``fn`` called inside a tf.cond branch."""
    args = _tensors(values)

    def run():
        with tf.GradientTape() as tape:
            for a in args:
                tape.watch(a)
            out = tf.cond(tf.constant(True), lambda: fn(*args), lambda: tf.zeros_like(args[0]))
            loss = tf.reduce_sum(out)
        return tape.gradient(loss, args)
    return run


def main() -> None:
    helpers = {"grad": grad, "grad_scaled": grad_scaled, "call": call, "var_grads": var_grads, "in_cond": in_cond, "tf": tf}
    results = {}
    for n, (key, source, expr, _) in enumerate(examples()):
        print(f"running {key}", file=sys.stderr, flush=True)  # names the example if TF aborts the process
        name = f"cg_tf_example_{n}"
        with open(os.path.join(_MODULES, f"{name}.py"), "w", encoding="utf-8") as fh:
            fh.write(source)
        try:
            module = importlib.import_module(name)
        except Exception as e:  # an example that fails on import is a result too
            results[key] = {"eager": outcome(lambda e=e: (_ for _ in ()).throw(e)), "graph": "not run"}
            continue
        try:
            thunk = eval(expr, {**vars(module), **helpers})  # noqa: S307 - our own examples
            results[key] = {"eager": outcome(thunk), "graph": outcome(tf.function(thunk))}
        finally:
            tf.config.run_functions_eagerly(False)  # an example may switch it on for its module
    json.dump(results, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
