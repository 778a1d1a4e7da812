"""Issue 21 §2: what counts as an input of a custom gradient (one gradient slot each), eagerly and
under tf.function.

Each scenario prints the gradients the caller gets (``None``: no gradient) and, where it matters,
the type ``f`` saw for a Python argument. The true gradients are given in each scenario's name.
"""

from __future__ import annotations

import collections

from _harness import mark, num, row

import tensorflow as tf

SEEN: list[str] = []


def two_ways(name: str, fn) -> None:
    """fn() -> nest of tensors, run eagerly and as a tf.function; the types f saw appended."""

    def run(wrap):
        def thunk() -> str:
            SEEN.clear()
            got = num(wrap(fn)())
            return got + (f" (f saw {', '.join(SEEN)})" if SEEN else "")
        return thunk

    row(name, run(lambda f: f), run(tf.function))


# -- containers as one positional argument -------------------------------------------------------

@tf.custom_gradient
def pair_sum(p):
    """2 * p[0] + 3 * p[1] for a tuple or list p."""
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 2.0, dy * 3.0

    return 2.0 * p[0] + 3.0 * p[1], grad


@tf.custom_gradient
def dict_sum_insertion_order(d):
    """2 * d["a"] + 3 * d["b"]; grad lists the gradients in the dict's insertion order (b, a)."""
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 3.0, dy * 2.0  # d["b"], d["a"], as the caller built the dict

    return 2.0 * d["a"] + 3.0 * d["b"], grad


@tf.custom_gradient
def dict_sum_sorted_order(d):
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 2.0, dy * 3.0  # "a" then "b": sorted keys

    return 2.0 * d["a"] + 3.0 * d["b"], grad


@tf.custom_gradient
def dict_sum_returns_dict(d):
    mark("f")

    def grad(dy):
        mark("grad")
        return {"b": dy * 3.0, "a": dy * 2.0}

    return 2.0 * d["a"] + 3.0 * d["b"], grad


BA = collections.namedtuple("BA", ["b", "a"])


@tf.custom_gradient
def namedtuple_sum(t):
    """2 * t.a + 3 * t.b; grad in field order (b, a)."""
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 3.0, dy * 2.0

    return 2.0 * t.a + 3.0 * t.b, grad


def grads_of(call, *xs):
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = call()
    return tape.gradient(y, list(xs))


def containers() -> None:
    a, b = (lambda: tf.constant(1.0)), (lambda: tf.constant(1.0))

    def tuple_arg():
        x, z = a(), b()
        return grads_of(lambda: pair_sum((x, z)), x, z)

    def list_arg():
        x, z = a(), b()
        return grads_of(lambda: pair_sum([x, z]), x, z)

    def dict_arg(cg):
        def run():
            xa, xb = a(), b()
            return grads_of(lambda: cg({"b": xb, "a": xa}), xa, xb)
        return run

    def namedtuple_arg():
        xa, xb = a(), b()
        return grads_of(lambda: namedtuple_sum(BA(b=xb, a=xa)), xa, xb)

    two_ways("tuple (x, z), grad returns 2 [want 2,3]", tuple_arg)
    two_ways("list [x, z], grad returns 2 [want 2,3]", list_arg)
    two_ways('dict {"b": xb, "a": xa}, grad in insertion order (b, a) [want a,b = 2,3]',
             dict_arg(dict_sum_insertion_order))
    two_ways('dict {"b": xb, "a": xa}, grad in sorted-key order (a, b) [want a,b = 2,3]',
             dict_arg(dict_sum_sorted_order))
    two_ways('dict {"b": xb, "a": xa}, grad returns a dict [want a,b = 2,3]', dict_arg(dict_sum_returns_dict))
    two_ways("namedtuple BA(b, a), grad in field order (b, a) [want a,b = 2,3]", namedtuple_arg)


# -- keyword arguments ---------------------------------------------------------------------------

@tf.custom_gradient
def scaled(x, s=None):
    """x * s; custom gradient 10 * (s, x) so that plain autodiff shows as (s, x)."""
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 10.0 * s

    return x * s, grad


@tf.custom_gradient
def scaled_two_grads(x, s=None):
    mark("f")

    def grad(dy):
        mark("grad")
        return dy * 10.0 * s, dy * 10.0 * x

    return x * s, grad


def keywords() -> None:
    def kw_tensor():
        x, s = tf.constant(2.0), tf.constant(3.0)
        return grads_of(lambda: scaled(x, s=s), x, s)

    def kw_tensor_two_grads():
        x, s = tf.constant(2.0), tf.constant(3.0)
        return grads_of(lambda: scaled_two_grads(x, s=s), x, s)

    def all_kw():
        x, s = tf.constant(2.0), tf.constant(3.0)
        return grads_of(lambda: scaled(x=x, s=s), x, s)

    def positional():
        x, s = tf.constant(2.0), tf.constant(3.0)
        return grads_of(lambda: scaled_two_grads(x, s), x, s)

    two_ways("f(x, s) both positional, grad returns 2 [custom x,s = 30,20]", positional)
    two_ways("f(x, s=s) tensor keyword, grad returns 1 [custom x,s = 30,20]", kw_tensor)
    two_ways("f(x, s=s) tensor keyword, grad returns 2 [custom x,s = 30,20]", kw_tensor_two_grads)
    two_ways("f(x=x, s=s) all by keyword [custom x,s = 30,20; autodiff 3,2]", all_kw)


# -- Python values as positional arguments --------------------------------------------------------

@tf.custom_gradient
def times_n(x, n):
    mark("f")
    SEEN.append(type(n).__name__)

    def grad(dy):
        mark("grad")
        return dy * 10.0, None

    return x * 2.0, grad


@tf.custom_gradient
def times_n_one_grad(x, n):
    mark("f")
    SEEN.append(type(n).__name__)

    def grad(dy):
        mark("grad")
        return dy * 10.0

    return x * 2.0, grad


@tf.custom_gradient
def times_n_range(x, n):
    mark("f")
    SEEN.append(type(n).__name__)
    y = x
    for _ in range(n):
        y = y * 2.0

    def grad(dy):
        mark("grad")
        return dy * 10.0, None

    return y, grad


@tf.custom_gradient
def with_mode(x, mode):
    mark("f")
    SEEN.append(type(mode).__name__)
    y = x * 2.0 if mode == "double" else x

    def grad(dy):
        mark("grad")
        return dy * 10.0, None

    return y, grad


@tf.custom_gradient
def with_mode_zero_grad(x, mode):
    mark("f")
    SEEN.append(type(mode).__name__)

    def grad(dy):
        mark("grad")
        return dy * 10.0, tf.zeros_like(mode)

    return x * 2.0, grad


def python_values() -> None:
    def call(cg, extra):
        def run():
            x = tf.constant(2.0)
            return grads_of(lambda: cg(x, extra), x)
        return run

    two_ways("f(x, 3) int, grad returns (dx, None) [custom 10]", call(times_n, 3))
    two_ways("f(x, 3) int, grad returns dx only", call(times_n_one_grad, 3))
    two_ways("f(x, 1) int used in range(n) [custom 10]", call(times_n_range, 1))
    two_ways('f(x, "double") str, grad returns (dx, None), `if mode == "double"` in f [custom 10]',
             call(with_mode, "double"))
    two_ways('f(x, "double") str, grad returns (dx, tf.zeros_like(mode))', call(with_mode_zero_grad, "double"))
    two_ways("f(x, 2.5) float, grad returns (dx, None) [custom 10]", call(times_n, 2.5))


def main() -> None:
    containers()
    keywords()
    python_values()


if __name__ == "__main__":
    main()
