"""grad is linear in its upstream (CG110), and eager and traced values agree (CG106): fixture modules
through the real runtime-check, and each defect and each correct design shown on TensorFlow itself,
eagerly and under tf.function."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

FIXTURES = Path(__file__).resolve().parent / "fixtures"

UPSTREAM_DEFECTS = {
    "ignores_upstream": "grad does not depend on its upstream gradient",
    "minus_one": "grad is not linear in its upstream gradient: for 'x'",
    "squared_upstream": "grad is not linear in its upstream gradient: for 'x'",
    "UnitUpstreamGain.__call__.<locals>.scaled": "grad is not linear in its upstream gradient: for 'gain'",
    "clipped_with_constant": "grad is not linear in its upstream gradient",
    "own_normalize": "grad is not linear in its upstream gradient: for 'x'",
    "sqrt_minus_one": "grad is not linear in its upstream gradient: for 'x'",
}
UPSTREAM_CORRECT = ["straight_through", "reverse_gradient", "clipped_square", "normalised_identity",
                    "l2_normalised_identity", "noisy_identity", "zero_gradient", "aliased_clip",
                    "masked_in_grad", "noise_added_in_grad", "sqrt_no_nan"]
MODE_DEFECTS = {
    "eager_only_factor": "eager and tf.function gradients differ for 'x'",
    "eager_only_forward": "eager and tf.function forwards differ (output 0",
}
MODE_CORRECT = ["eager_only_check", "dropout", "seeded_noise", "noisy_grad", "shake_drop"]


@pytest.fixture(scope="module")
def results(cli):
    from conftest import Results

    return Results(cli("--format", "json", "upstream.py", "modes.py"))


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_cg_fixture_{name}", FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gradient(fn, x, upstream, traced: bool):
    """d<fn(x), upstream>/dx, eagerly or under tf.function."""
    def run(x, upstream):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x, output_gradients=upstream)
    return (tf.function(run) if traced else run)(x, upstream).numpy()


X = tf.constant([0.35, -0.9, 1.45])
U1 = tf.constant([0.8, -1.2, 0.6])
U2 = tf.constant([-0.7, 0.9, 1.3])


@pytest.mark.parametrize("function, text", UPSTREAM_DEFECTS.items())
def test_upstream_defects_are_cg110(results, function, text):
    finding = results.one(function, "CG110")
    assert text in finding["message"] and finding["path"].endswith("upstream.py")
    assert "inputs x: float32[]" in finding["message"]  # which inputs showed it
    assert results.codes(function) == {"CG110"}


@pytest.mark.parametrize("function", UPSTREAM_CORRECT)
def test_surrogates_clipping_normalising_and_noise_are_not_reported(results, function):
    assert results.of(function, "upstream.py") == []


@pytest.mark.parametrize("function, text", MODE_DEFECTS.items())
def test_mode_dependent_math_is_cg106(results, function, text):
    finding = results.one(function, "CG106")
    assert text in finding["message"] and finding["mode"] == "eager, tf.function"


@pytest.mark.parametrize("function", MODE_CORRECT)
def test_random_forwards_and_mode_checks_are_not_reported(results, function):
    assert results.of(function, "modes.py") == []


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow_the_defects_are_not_linear_and_the_designs_are(traced):
    m = load("upstream")
    for fn in (m.ignores_upstream, m.minus_one, m.squared_upstream, m.clipped_with_constant, m.own_normalize):
        combined = gradient(fn, X, 0.7 * U1 - 1.3 * U2, traced)
        separate = 0.7 * gradient(fn, X, U1, traced) - 1.3 * gradient(fn, X, U2, traced)
        assert not np.allclose(combined, separate, atol=1e-4), fn
    for fn in (m.straight_through, m.reverse_gradient, m.zero_gradient):
        combined = gradient(fn, X, 0.7 * U1 - 1.3 * U2, traced)
        separate = 0.7 * gradient(fn, X, U1, traced) - 1.3 * gradient(fn, X, U2, traced)
        np.testing.assert_allclose(combined, separate, rtol=1e-5, atol=1e-6)
    # clipping is active on these upstreams and inactive on small ones, where grad is linear
    clip = m.clipped_square
    assert not np.allclose(gradient(clip, X, 2 * U1, traced), 2 * gradient(clip, X, U1, traced))
    small = 1e-3 * U1
    np.testing.assert_allclose(gradient(clip, X, 2 * small, traced), 2 * gradient(clip, X, small, traced),
                               rtol=1e-5)
    # normalising: the same gradient for u and 2u (never linear, by design)
    norm = m.normalised_identity
    np.testing.assert_allclose(gradient(norm, X, 2 * U1, traced), gradient(norm, X, U1, traced), rtol=1e-5)


def test_on_tensorflow_the_variable_gradient_ignores_its_upstream():
    m = load("upstream")
    layer = m.UnitUpstreamGain()
    for traced in (False, True):
        def run(x, upstream):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x)
            return tape.gradient(y, layer.gain, output_gradients=upstream)
        fn = tf.function(run) if traced else run
        assert np.isclose(fn(X, U1).numpy(), fn(X, U2).numpy())  # its upstream makes no difference


def test_on_tensorflow_the_eager_branch_changes_the_values():
    m = load("modes")
    eager = gradient(m.eager_only_factor, X, U1, traced=False)
    traced = gradient(m.eager_only_factor, X, U1, traced=True)
    np.testing.assert_allclose(eager, 2 * traced, rtol=1e-6)
    assert not np.allclose(m.eager_only_forward(X).numpy(), tf.function(m.eager_only_forward)(X).numpy())
    # the check-only branch: the same values in both modes
    np.testing.assert_allclose(gradient(m.eager_only_check, X, U1, traced=False),
                               gradient(m.eager_only_check, X, U1, traced=True), rtol=1e-6)
    # noise drawn in grad: two eager passes already differ, so eager vs traced says nothing
    assert not np.allclose(gradient(m.noisy_grad, X, U1, traced=False), gradient(m.noisy_grad, X, U1, traced=False))


def test_upstream_flow_reads_clipping_and_normalising_from_the_source():
    """Read through cg-lint's model (qualified names): grads found by the model and, failing
    that, any function of the grad's name on its line."""
    from runtime_check.linearity import CLIP, NORMALISE, upstream_flow

    m = load("upstream")
    assert upstream_flow(m.clip_grad) == {CLIP}
    assert upstream_flow(m.rsqrt_grad) == {NORMALISE}
    assert upstream_flow(m.divided_by_other_norm) == frozenset()
    assert upstream_flow(m.lambda_holder()) == {CLIP}
    assert upstream_flow(m.normalize) == frozenset()  # no upstream: a helper of the project's own
    for name, flow in (("clipped_square", {CLIP}), ("aliased_clip", {CLIP}), ("normalised_identity", {NORMALISE}),
                       ("own_normalize", set())):
        assert _flow_of_grad(getattr(m, name)) == flow, name


def _flow_of_grad(fn) -> set[str]:
    """What cg-lint's model says about the grad nested in ``fn``'s forward, located as the
    checker locates a live grad function: its file, first line and name."""
    import inspect

    from cg_lint.api import grad_upstream_uses

    forward = inspect.unwrap(fn)
    code = next(c for c in forward.__code__.co_consts if inspect.iscode(c))
    path = forward.__code__.co_filename
    with open(path, encoding="utf-8") as handle:
        return set(grad_upstream_uses(handle.read(), path, code.co_firstlineno, code.co_name))


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow_a_gate_probability_moves_no_output_at_fixed_randomness(traced):
    """CG104 asks whether the forward moves with an input; for a random forward, at fixed draws."""
    m = load("modes")

    def forward(p):
        return m.shake_drop(X, p, tf.constant(0.0), tf.constant(1.0))

    def run(p):
        tf.random.set_seed(3)  # a fresh trace each time: the same op seeds, the same draws
        return (tf.function(forward) if traced else forward)(p)

    for p in (0.3, 0.7):
        np.testing.assert_array_equal(run(tf.constant(p)).numpy(), run(tf.constant(p + 1e-3)).numpy())


def test_random_grads_are_judged_at_fixed_randomness_and_never_by_chance():
    """A scalar mask drawn in grad repeats itself on half the passes: judged by whether two passes
    agree, it looked deterministic and then not linear, a false CG110 about one run in four (and
    noise to 1e-4 by chance about one in 700). Every run gives the same verdict."""
    from runtime_check.linearity import check

    m = load("upstream")
    for _ in range(40):
        x = tf.constant(0.35)
        assert check(m.masked_in_grad, [x], ["x"], [x], []).code == ""
        x = tf.constant(0.35)
        verdict = check(m.noise_added_in_grad, [x], ["x"], [x], [])
        assert verdict.code == "" and "not linear in its upstream at fixed randomness" in verdict.note
    x = tf.constant(0.35)  # a deterministic defect is still one
    assert check(m.minus_one, [x], ["x"], [x], []).code == "CG110"


def test_checks_leave_no_global_seed_behind():
    """A seed left set by one check would fix every later draw in the worker: findings would
    depend on which definitions ran before."""
    from tensorflow.python.eager import context

    from runtime_check.linearity import check

    m = load("upstream")
    x = tf.constant([0.35, -0.9])
    try:
        for seed in (None, 77):  # none, or the project's own
            tf.random.set_seed(seed)
            check(m.noise_added_in_grad, [x], ["x"], [x], [])
            assert context.global_seed() == seed
    finally:
        tf.random.set_seed(None)


def test_on_tensorflow_a_reset_seed_fixes_grad_s_draws():
    """What the check relies on: after tf.random.set_seed, grad draws the same numbers, so a mask
    that scales the upstream is linear and added noise is not, and moves with the seed."""
    m = load("upstream")

    def at_seed(fn, upstream, seed=5):
        tf.random.set_seed(seed)
        return gradient(fn, X, upstream, traced=False)

    try:
        combined = at_seed(m.masked_in_grad, 0.7 * U1 - 1.3 * U2)
        np.testing.assert_allclose(combined, 0.7 * at_seed(m.masked_in_grad, U1) - 1.3 * at_seed(m.masked_in_grad, U2),
                                   rtol=1e-6)
        combined = at_seed(m.noise_added_in_grad, 0.7 * U1 - 1.3 * U2)
        separate = 0.7 * at_seed(m.noise_added_in_grad, U1) - 1.3 * at_seed(m.noise_added_in_grad, U2)
        assert not np.allclose(combined, separate, rtol=1e-6)
        assert not np.array_equal(at_seed(m.noise_added_in_grad, U1), at_seed(m.noise_added_in_grad, U1, seed=6))
    finally:
        tf.random.set_seed(None)


def test_linearity_is_judged_where_the_gradient_is_finite():
    """On an input outside the forward's domain (sqrt of -1) the gradient is NaN in every pass:
    NaN is never equal to NaN, and was read as "not linear" (tf-quant-finance's _sqrt_no_nan)."""
    from runtime_check.linearity import check

    m = load("upstream")
    x = tf.constant([4.0, -1.0])
    assert check(m.sqrt_no_nan, [x], ["x"], [x], []).code == ""
    verdict = check(m.sqrt_minus_one, [x], ["x"], [x], [])
    assert verdict.code == "CG110" and "for 'x'" in verdict.message
    assert check(m.sqrt_no_nan, [tf.constant([-1.0, -4.0])], ["x"], [tf.constant([-1.0, -4.0])], []).code == ""
