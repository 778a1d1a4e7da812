"""A finding only on inputs a project could pass: broadcast-only shapes are opt-in (CG111), and
None is right for a hyper-parameter (real TensorFlow, through the real runtime-check)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def default_run(cli):
    from conftest import Results

    return Results(cli("--format", "json", "plausible.py"))


@pytest.fixture(scope="module")
def broadcast_run(cli):
    from conftest import Results

    return Results(cli("--format", "json", "--broadcast-shapes", "plausible.py"))


def test_a_shape_seen_only_on_made_up_broadcasts_is_opt_in(default_run, broadcast_run):
    assert default_run.of("affine_unreduced") == []
    findings = [f for f in broadcast_run.of("affine_unreduced") if "for input 'gamma'" in f["message"]]
    assert broadcast_run.codes("affine_unreduced") == {"CG111"} and len(findings) == 1
    finding = findings[0]
    assert "has shape (2, 3) but the input has shape (3,)" in finding["message"]
    assert "which no call site, test or configuration shows" in finding["message"]
    assert finding["mode"] == "eager"  # the broadcast variants are run eagerly only


def test_a_broadcast_a_call_site_shows_is_cg101_by_default(default_run, broadcast_run):
    for run in (default_run, broadcast_run):
        finding = run.one("channel_scale", "CG101")
        assert "inputs x: float32[4,3], gamma: float32[3]" in finding["message"]
        assert run.codes("channel_scale") == {"CG101"}


def test_none_for_a_hyper_parameter_is_no_finding_for_a_learned_input_it_is(default_run):
    assert default_run.of("smooth") == []
    finding = default_run.one("gate", "CG104")
    assert "None for floating input 'w'" in finding["message"]


def test_on_tensorflow_the_hyper_parameter_and_the_learned_input_both_get_none():
    spec = importlib.util.spec_from_file_location("_cg_fixture_plausible", FIXTURES / "plausible.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, p = tf.constant([0.5, -1.5]), tf.constant(2.0)
    def gradients_of(fn):
        def grads(x, p):
            with tf.GradientTape() as tape:
                tape.watch([x, p])
                y = fn(x, p)
            return tape.gradient(y, [x, p])
        return grads

    for fn in (module.smooth, module.gate):
        grads = gradients_of(fn)
        for run in (grads, tf.function(grads, autograph=False)):  # eagerly and traced
            dx, dp = run(x, p)
            assert dx is not None and dp is None


def test_hyper_parameter_reads_defaults_and_docstrings():
    from runtime_check.checked import hyper_parameter

    def f(x, temperature=0.5, w=None, flag=True):
        """Args:
          x: data.
          w: learned weights.
        """

    def g(x, width):
        """width: the smoothing hyper-parameter."""

    assert hyper_parameter(f, "temperature")
    assert not hyper_parameter(f, "w") and not hyper_parameter(f, "flag") and not hyper_parameter(f, "x")
    assert hyper_parameter(g, "width") and not hyper_parameter(g, "x")
