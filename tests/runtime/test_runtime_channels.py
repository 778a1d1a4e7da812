"""Per-channel parameters (fixture ``channel_norms.py``): a scale or offset the forward ties to the
data's channels is probed as ``[C]`` beside an NHWC batch, not with a shape of its own that
broadcasts in a way the function is not written for. Read from the source, run on real TensorFlow."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import pytest

from runtime_check.inputs.assign import structured
from runtime_check.inputs.channels import per_channel
from runtime_check.inputs.hints import facts_for, find_function

FIXTURES = Path(__file__).resolve().parent / "fixtures"

SOURCE = textwrap.dedent('''
    import tensorflow as tf

    def stats_scale(x, gamma, beta, eps=1e-3):
        mean, var = tf.nn.moments(x, axes=(0, 1, 2))
        k = tf.math.rsqrt(var + eps) * gamma
        return x * k + beta - mean * k

    def normalised_affine(x, gamma, beta):
        m, v = tf.nn.moments(x, axes=[0, 1])
        xhat = (x - m) * tf.math.rsqrt(v + 1e-5)
        return xhat * gamma + beta

    def reshaped(x, w):
        return x * tf.reshape(w, [1, 1, 1, -1])

    def fused(x, scale, offset):
        y, _, _, _, _, _ = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=tf.constant([]),
                                                        variance=tf.constant([]), epsilon=1e-3, is_training=True)
        return y

    def library(x, offset, scale):
        mean, variance = tf.nn.moments(x, axes=[0, 1, 2])
        return tf.nn.batch_normalization(x, mean, variance, offset, scale, 1e-3)

    def residual(x, skip):
        return x * 2.0 + skip

    def kept_dims(x, gamma):
        mean = tf.reduce_mean(x, axis=(0, 1, 2), keepdims=True)
        return (x - mean) * gamma

    def also_a_matrix(x, gamma):
        mean = tf.reduce_mean(x, axis=[0])
        return tf.matmul(x, gamma) + mean * gamma

    def stats_of_a_local(x, gamma):
        h = x * 2.0
        mean = tf.reduce_mean(h, axis=[0, 1, 2])
        return h * gamma - mean
''')


def _facts(name: str, params: list[str]):
    tree = ast.parse(SOURCE)
    return facts_for(find_function(tree, name), params, tree, finish=per_channel)


@pytest.mark.parametrize("name, params, data_rank, channels", [
    ("stats_scale", ["x", "gamma", "beta"], 4, ["gamma", "beta"]),
    ("normalised_affine", ["x", "gamma", "beta"], 3, ["gamma", "beta"]),
    ("reshaped", ["x", "w"], 4, ["w"]),
    ("fused", ["x", "scale", "offset"], 4, ["scale", "offset"]),
    ("library", ["x", "offset", "scale"], 4, ["offset", "scale"]),
])
def test_a_per_channel_parameter_is_a_vector_of_the_data_s_last_axis(name, params, data_rank, channels):
    facts = _facts(name, params)
    assert facts.min_rank["x"] == data_rank  # the reduced axes and one left over: the channels
    candidate = dict(zip(params, structured(facts, (2, 3))))
    for param in channels:
        assert facts.rank[param] == 1 and "per channel of x" in facts.why[param]
        assert candidate[param].shape == (candidate["x"].shape[-1],)
    assert len(set(candidate["x"].shape)) == data_rank  # other sizes still distinct


@pytest.mark.parametrize("name, params", [
    ("residual", ["x", "skip"]),  # no statistics: added to the data, whatever its shape
    ("kept_dims", ["x", "gamma"]),  # keepdims: a [1, 1, 1, C] or full-shape gamma is as likely
    ("also_a_matrix", ["x", "gamma"]),  # a matmul operand: the source says it is a matrix
    ("stats_of_a_local", ["x", "gamma"]),  # the statistics of a local, not of a parameter
])
def test_parameters_the_source_does_not_tie_to_channels_keep_their_facts(name, params):
    facts = _facts(name, params)
    assert not any("per channel" in why for why in facts.why.values())
    if name == "also_a_matrix":
        assert facts.min_rank["gamma"] == 2


tf = pytest.importorskip("tensorflow")


def _load():
    spec = importlib.util.spec_from_file_location("_cg_fixture_channel_norms", FIXTURES / "channel_norms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.tf
def test_runtime_check_probes_per_channel_and_finds_only_the_unsummed_gradient(cli):
    completed = cli("channel_norms.py")
    text = completed.stdout
    assert completed.returncode == 1, completed.stderr
    assert "5 function(s) checked, 1 finding(s)" in text
    assert ("CG101 'norm_scale_unsummed': gradient for input 'scale' has shape (3, 4, 5) but the input has "
            "shape (5,) [eager, tf.function; inputs x: float32[2,3,4,5], scale: float32[5]; from the source's hints "
            "(x: scale is per channel of x; scale: per channel of x)]") in text
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("channel_norms.py:")}
    for function, params in (("make_norm.<locals>.norm", "scale: float32[5], bias: float32[5]"),
                             ("make_folded_norm.<locals>.folded_norm", "scale: float32[5], bias: float32[5]"),
                             ("channel_gain", "gain: float32[5]"),
                             ("library_norm", "offset: float32[5], scale: float32[5]")):
        row = rows[f"channel_norms.py:{function}"]
        assert row.split()[1] == "ok" and f"x: float32[2,3,4,5], {params}" in row, row


@pytest.mark.tf
@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow_channel_gradients_fit_a_vector_scale_and_not_a_broadcast_one(traced):
    """Why the probe is per channel: on an NHWC batch with ``[C]`` parameters every gradient fits,
    eagerly and traced; with a ``[2, 2]`` scale on a ``[2, 2, 2]`` batch (what the search tried
    before) the same correct gradient, summed over axes 0-2, is a scalar: a finding about a call
    the function is not written for."""
    m = _load()
    norm = m.make_folded_norm()

    def grads(x, scale, bias):
        with tf.GradientTape() as tape:
            tape.watch([x, scale, bias])
            y = norm(x, scale, bias)
        return tape.gradient(y, [x, scale, bias])

    run = tf.function(grads) if traced else grads
    x = tf.reshape(tf.range(2 * 3 * 4 * 5, dtype=tf.float32), (2, 3, 4, 5)) / 50.0
    gx, gscale, gbias = run(x, tf.linspace(0.5, 1.5, 5), tf.zeros([5]))
    assert (gx.shape, gscale.shape, gbias.shape) == ((2, 3, 4, 5), (5,), (5,))
    small = tf.reshape(tf.range(8, dtype=tf.float32), (2, 2, 2)) / 10.0
    _, gscale, gbias = run(small, tf.ones([2, 2]), tf.zeros([2, 2]))
    assert (gscale.shape, gbias.shape) == ((), ())
