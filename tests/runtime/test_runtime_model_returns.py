"""Which nested function a factory returns, read through cg-lint's model (``cg_lint.api``), as
runtime-check decides what to call: the forms the previous reader of its own understood give
the same answers, and names are resolved in their scopes where it matched them by spelling."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cg_lint.api import returned_functions
from runtime_check.discover import returns_inner

SOURCE = textwrap.dedent('''
    import functools
    import tensorflow as tf

    def direct(strength=1.0):
        @tf.custom_gradient
        def reverse(x):
            return tf.identity(x), lambda dy: -strength * dy
        return reverse

    def wrapped(f):
        @tf.custom_gradient
        def inner(x):
            return f(x), lambda dy: dy
        return functools.wraps(f)(inner)

    def through_a_name(f):
        @tf.custom_gradient
        def inner(x):
            return f(x), lambda dy: dy
        made = make_decorator(f, inner)
        return made

    def calls_it(x):  # uses its custom gradient: not a factory
        @tf.custom_gradient
        def inner(x):
            return tf.identity(x), lambda dy: dy
        return inner(x)

    def shadowed(inner):  # returns its parameter, not the def below of the same name
        def helper():
            @tf.custom_gradient
            def inner(x):
                return tf.identity(x), lambda dy: dy
            return inner
        return inner

    def options(f0=None, step=1e-3):
        def wrap(f):
            @tf.custom_gradient
            def made(x):
                return f(x), lambda dy: dy
            return made
        if f0 is None:
            return wrap
        return wrap(f0)

    def make_decorator(f, g):
        return g
''')

CASES = [
    ("direct", "reverse", False, True),
    ("wrapped", "inner", False, True),
    ("through_a_name", "inner", False, True),
    ("calls_it", "inner", False, False),
    ("calls_it", "inner", True, False),  # `inner(x)` calls the custom gradient on a tensor: no next level
    ("shadowed", "inner", False, False),
    ("shadowed.<locals>.helper", "inner", False, True),
    ("options", "wrap", False, True),
    ("options", "wrap", True, True),
    ("options.<locals>.wrap", "made", False, True),
]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("factories") / "factories.py"
    file.write_text(SOURCE, encoding="utf-8")
    return file


@pytest.mark.parametrize("outer, inner, called, expected", CASES)
def test_which_nested_function_a_factory_returns(path: Path, outer: str, inner: str, called: bool, expected: bool):
    assert returns_inner(str(path), outer, inner, called=called) is expected


def test_the_model_tells_returned_from_called(path: Path):
    options = returned_functions(SOURCE, str(path), "options")
    assert options.functions == {"options.<locals>.wrap"} and options.called == {"options.<locals>.wrap"}
    assert returned_functions(SOURCE, str(path), "calls_it").functions == frozenset()
    assert returned_functions(SOURCE, str(path), "no_such_function").functions == frozenset()
    assert returned_functions("def broken(:\n", str(path), "broken").functions == frozenset()
