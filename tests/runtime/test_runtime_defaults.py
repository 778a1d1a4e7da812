"""Parameters with a Python-number default are passed as the project passes them (its calls, else
grad's count): fixture modules through the real runtime-check, and each verdict on TensorFlow
itself, eagerly and under tf.function."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

FIXTURES = Path(__file__).resolve().parent / "fixtures"
X = tf.constant([0.35, -0.9, 1.45])


@pytest.fixture(scope="module")
def results(cli):
    from conftest import Results

    return Results(cli("--format", "json", "defaults.py"))


@pytest.fixture(scope="module")
def module():
    spec = importlib.util.spec_from_file_location("_cg_fixture_defaults", FIXTURES / "defaults.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def gradient(fn, *args, traced: bool):
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, *args)
        return tape.gradient(y, x)
    return (tf.function(run) if traced else run)(X)


def test_defaults_the_project_passes_are_inputs(results):
    finding = results.one("scaled", "CG003")
    assert "grad returns 1 gradient(s) for 2 input(s) (x, factor)" in finding["message"]
    assert "inputs x: float32[], factor: 3.0" in finding["message"]  # the value the call passes
    assert results.codes("scaled") == {"CG003"}


@pytest.mark.parametrize("function", ["reverse", "quantize", "smooth_abs", "shifted_round"])
def test_correct_defaults_are_quiet(results, function):
    assert results.of(function) == []


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow(module, traced):
    # as the project calls them: reverse and quantize work with their defaults passed
    assert gradient(module.reverse, 0.5, traced=traced).numpy().tolist() == pytest.approx([-0.5] * 3)
    assert gradient(module.quantize, 4, 0.5, traced=traced).numpy().tolist() == pytest.approx([1.0] * 3)
    # smooth_abs with eps left out: one input, one gradient
    assert gradient(module.smooth_abs, traced=traced).shape == (3,)
    # a Python-number input gets no gradient from TF, whatever shape grad gives it
    assert gradient(module.shifted_round, 0.25, traced=traced).shape == (3,)
    # scaled as the project calls it: TF counts factor as an input and rejects grad's one gradient
    with pytest.raises(Exception, match="gradient"):
        gradient(module.scaled, 3.0, traced=traced)
