"""Which ``=`` reaches a use in straight-line code (``FileIndex.reaching_assign``), and where the
syntax layer says it does not know: branches, loops, closures, augmented assignments,
``global``/``nonlocal``/``del``."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from cg_lint.prefilter.prepared import Prepared
from cg_lint.syntax.index import FileIndex


def _reaching(source: str) -> str | None:
    """The code of the assignment that reaches the use marked ``# use`` (its ``y`` read in the
    value, or the last ``y`` on the line), or None."""
    source = textwrap.dedent(source)
    module = cst.parse_module(source)
    index = FileIndex(Prepared(source, module))
    line = next(i for i, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith("# use"))
    uses = [n for n in index.nodes if type(n) is cst.Name and n.value == "y" and index.position(n)[0] == line]
    assert uses, "the marked line reads y"
    found = index.reaching_assign(uses[-1])
    return None if found is None else module.code_for_node(found).rstrip("; ")


def test_the_last_binding_before_the_use_reaches_it() -> None:
    assert _reaching("""
        def f(x):
            y = a(x)
            y = b(y)
            z = y.shape  # use
            y = c(z)
    """) == "y = b(y)"


def test_a_use_in_the_value_sees_the_bindings_before_its_assignment() -> None:
    assert _reaching("""
        def f(x):
            y, s = a(x)
            y = g(y, [y.shape[-1]])  # use
    """) == "y, s = a(x)"


def test_small_statements_on_one_line_keep_their_order() -> None:
    assert _reaching("""
        def f(x):
            y = a(x); y = b(y); z = y.shape  # use
    """) == "y = b(y)"


def test_a_block_of_its_own_counts_when_every_binding_is_in_it() -> None:
    assert _reaching("""
        def f(x):
            with ctx():
                y = a(x)
                z = y.shape  # use
    """) == "y = a(x)"


def test_the_test_of_an_if_sees_the_bindings_before_it() -> None:
    assert _reaching("""
        def f(x):
            y = a(x)
            if y.shape:  # use
                pass
    """) == "y = a(x)"


@pytest.mark.parametrize("source", [
    pytest.param("""
        def f(x):
            y = a(x)
            if x:
                y = b(y)
            z = y.shape  # use
    """, id="binding-in-a-branch"),
    pytest.param("""
        def f(x):
            y = a(x)
            if x:
                z = y.shape  # use
    """, id="use-in-a-branch"),
    pytest.param("""
        def f(x):
            for i in x:
                y = a(i)
                z = y.shape  # use
    """, id="loop-around"),
    pytest.param("""
        def f(x):
            while x:
                if x:
                    y = a(x)
                    z = y.shape  # use
    """, id="loop-further-out"),
    pytest.param("""
        def f(x):
            y = a(x)
            y += b(x)
            z = y.shape  # use
    """, id="augmented"),
    pytest.param("""
        def f(x):
            y = a(x)
            g = lambda: y.shape  # use
    """, id="lambda"),
    pytest.param("""
        def f(x):
            y = a(x)
            def g():
                return y.shape  # use
    """, id="closure"),
    pytest.param("""
        def f(x):
            y = a(x)
            def g():
                nonlocal y
                y = b(x)
            g()
            z = y.shape  # use
    """, id="nonlocal-in-a-nested-def"),
    pytest.param("""
        def f(x):
            global y
            y = a(x)
            z = y.shape  # use
    """, id="global"),
    pytest.param("""
        def f(x):
            y = a(x)
            z = [y.shape for _ in x]  # use
    """, id="comprehension"),
    pytest.param("""
        def f(x):
            y = a(x)
            z = (y := b(x)).shape, y.shape  # use
    """, id="walrus"),
    pytest.param("""
        def f(x):
            y = a(x)
            for y in x:
                pass
            z = y.shape  # use
    """, id="for-target"),
    pytest.param("""
        def f(x):
            z = y.shape  # use
            y = a(x)
    """, id="no-binding-before"),
    pytest.param("""
        def f(y):
            z = y.shape  # use
            y = a(y)
    """, id="parameter"),
    pytest.param("""
        def f(x):
            y = a(x)
            y, w[y.shape] = b(x)  # use
    """, id="use-in-a-target"),
    pytest.param("""
        y = a(1)
        z = y.shape  # use
    """, id="module-level"),
])
def test_unsure_when_order_alone_does_not_decide(source: str) -> None:
    assert _reaching(source) is None
