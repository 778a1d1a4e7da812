"""The bundled examples' findings are real: each flagged function fails under TensorFlow."""

from __future__ import annotations

import importlib.util
import os

import pytest

from lint_helpers import ROOT

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def arity():
    spec = importlib.util.spec_from_file_location("arity_examples", ROOT / "examples" / "arity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gradient(fn, *args, traced: bool):
    def run():
        with tf.GradientTape() as tape:
            for a in args:
                tape.watch(a)
            out = fn(*args)
            loss = tf.add_n([tf.reduce_sum(o) for o in tf.nest.flatten(out)])
        return tape.gradient(loss, list(args))

    return tf.function(run)() if traced else run()


X = tf.constant([1.0, 2.0, 3.0, 4.0])


def test_cg003_too_few_gradients(arity):
    with pytest.raises(ValueError, match="expected to return 2 gradients, but returned 1"):
        gradient(arity.scaled_product, X, tf.constant(2.0), traced=False)
    with pytest.raises(tf.errors.InternalError, match="returned too few gradients"):
        gradient(arity.scaled_product, X, tf.constant(2.0), traced=True)


def test_cg001_three_values(arity):
    with pytest.raises(ValueError, match="too many values to unpack"):
        arity.mean_and_spread(X)


def test_cg002_one_packed_upstream(arity):
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        gradient(arity.split_halves, X, traced=False)


def test_the_correct_example_works_in_both_modes(arity):
    for traced in (False, True):
        (g,) = gradient(arity.stable_softplus, tf.constant([-100.0, 0.0, 100.0]), traced=traced)
        assert g.numpy().tolist() == pytest.approx([0.0, 0.5, 1.0])
