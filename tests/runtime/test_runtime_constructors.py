"""Required constructor and factory arguments get values of the kind the source says (real TensorFlow)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Optional, Union

import numpy as np
import pytest

from runtime_check.constructor_values import Unknown, describe, kind_of_annotation, kinds_from_body


@pytest.mark.parametrize("annotation, kind", [
    (int, "int"), ("int", "int"), (float | None, "float"), ("float | None", "float"), ("Optional[bool]", "bool"),
    (Optional[float], "float"), (Union[int, str], "int"),  # noqa: UP007, UP045 (the typing objects themselves)
    ("tf.Tensor", "tensor"), ("tf.Variable", "variable"), ("np.ndarray", "array"),
    (Callable[[int], int], "callable"), ("Callable[[tf.Tensor], tf.Tensor]", "callable"),
    (inspect.Parameter.empty, None),
])
def test_annotations_name_a_kind(annotation, kind):
    assert kind_of_annotation(annotation) == kind


@pytest.mark.parametrize("annotation", [str, "Sequence[Parameter]", "tfp.distributions.Distribution"])
def test_other_annotations_cannot_be_guessed(annotation):
    with pytest.raises(Unknown):
        kind_of_annotation(annotation)


def _body(centroids, fn, table, other):
    if not isinstance(centroids, (tf.Variable, list)):  # noqa: F821 (read, never run)
        raise ValueError
    if not callable(fn):
        raise TypeError
    return table(other)


def test_the_body_says_what_a_parameter_is():
    assert kinds_from_body(_body) == {"centroids": "variable", "fn": "callable", "table": "callable"}


def test_a_function_without_source_says_nothing():
    assert kinds_from_body(len) == {}


def test_made_values_are_described_on_one_line():
    tf = pytest.importorskip("tensorflow")
    assert describe(tf.Variable([1.0, 2.0, 3.0])) == "tf.Variable float32[3]"
    assert describe(3) == "3"
    assert describe(lambda x: x) == "a function"


@pytest.mark.tf
def test_objects_and_factories_are_built_from_what_the_source_says(cli):
    from conftest import Results

    pytest.importorskip("tensorflow")
    results = Results(cli("--format", "json", "constructed.py"))
    assert results.completed.returncode == 1, results.completed.stderr[-2000:]
    by_function = {f["function"]: f for f in results.findings}
    assert set(by_function) == {"BrokenCodebook.straight_through", "Tempered.soften"}, results.findings
    assert by_function["BrokenCodebook.straight_through"]["code"] == "CG101"
    assert by_function["Tempered.soften"]["code"] == "CG102"
    text = cli("constructed.py")
    rows = {ln.split()[0]: ln.split()[1] for ln in text.stdout.splitlines() if ln.startswith("constructed.py:")}
    assert rows["constructed.py:Codebook.straight_through"] == "ok", text.stdout
    assert rows["constructed.py:make_gated.<locals>.gated"] == "ok", text.stdout


def test_a_custom_gradient_two_factory_levels_deep_is_made_and_run():
    """``numeric_gradient()`` returns ``wrap``; ``wrap(f)`` returns the custom gradient ``made``,
    whose grad calls its sibling ``slope``: both are run, and the factory itself, which takes no
    tensors, is no CG130."""
    from conftest import FIXTURES

    from runtime_check import runner
    from runtime_check.targets import file_unit

    options = {"jit": False, "numeric": False, "zero_upstream": False, "magnitudes": True, "second_order": False}
    result = runner.run([file_unit(FIXTURES / "option_factories.py")], options, {}, 60.0, jobs=1)
    (entry,) = result.entries.values()
    assert entry.status == "checked" and entry.used and entry.findings == [] and result.findings == []
    called = {c.rsplit(":", 1)[1] for c in entry.called}
    assert called == {"numeric_gradient.<locals>.wrap.<locals>.made", "numeric_gradient.<locals>.wrap.<locals>.slope"}


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow_the_two_level_factory_gives_the_derivative(traced):
    import importlib.util

    from conftest import FIXTURES

    spec = importlib.util.spec_from_file_location("_cg_fixture_option_factories", FIXTURES / "option_factories.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tf = pytest.importorskip("tensorflow")
    def derivative(made, x):
        def run(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = made(x)
            return tape.gradient(y, x)
        return (tf.function(run) if traced else run)(x)

    for made in (module.numeric_gradient(tf.sin), module.numeric_gradient(step=1e-2)(tf.sin)):
        x = tf.constant([0.3, -1.2], tf.float64)
        got = derivative(made, x)
        assert np.allclose(got.numpy(), np.cos(x.numpy()), atol=1e-4)
