"""Inputs a function states in asserts, strides and NumPy calls (fixture ``image_ops.py``, written
like StyleGAN2's NCHW image ops): the rank an assert demands, even sizes for what halves them, a
list for a kernel made into a NumPy array; read through helpers, and run on real TensorFlow."""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import numpy as np
import pytest

from runtime_check.inputs.assign import materialize, structured
from runtime_check.inputs.channels import per_channel
from runtime_check.inputs.hints import facts_for, find_function

FIXTURES = Path(__file__).resolve().parent / "fixtures"

SOURCE = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf

    def _helper(x, k):
        assert x.shape.ndims == 4 and k.ndim >= 2
        return tf.nn.conv2d(x, k, strides=1, padding="SAME")

    def asserted(x, k):
        return _helper(x * 0.5, k)

    def conv_only(x, k):
        return tf.nn.conv2d(x, k, strides=1, padding="SAME")

    def kernel_list(x, kernel):
        f = np.array(kernel, dtype=np.float32)
        assert f.ndim == 2
        f = np.tile(f[:, :, None, None], [1, 1, int(x.shape[1]), 1])
        return tf.nn.depthwise_conv2d(x, f, strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW")

    def pooled(x):
        return tf.nn.avg_pool(x, ksize=2, strides=2, padding="VALID")

    def tiled(x, n):
        return tf.tile(x, [1, n])

    def first_made_array(x):
        return tf.constant(np.asarray(x))

    def gated(x, low):
        shape = [tf.shape(x)[0], 1, 1, 1]
        return x * tf.random.uniform(shape, low, 1.0)

    def flattened(x):
        return tf.reshape(x, [tf.shape(x)[0], -1, 1, 1])
''')


def _facts(name: str, params: list[str]):
    tree = ast.parse(SOURCE)
    return facts_for(find_function(tree, name), params, tree, finish=per_channel)


def test_an_asserted_rank_is_read_through_a_helper_and_overrules_a_conv():
    facts = _facts("asserted", ["x", "k"])
    assert facts.rank["x"] == facts.min_rank["x"] == 4  # `x * 0.5` passes x's shape on
    assert facts.min_rank["k"] == 4 and "k" not in facts.asserted  # `>= 2` is a lower bound only
    assert _facts("conv_only", ["x", "k"]).min_rank == {"x": 4, "k": 4}


def test_a_kernel_made_into_a_numpy_array_is_a_list_and_a_dimension_read_is_no_int():
    facts = _facts("kernel_list", ["x", "kernel"])
    assert facts.kind == {"kernel": "array"}  # `int(x.shape[1])` reads x's shape: x stays a tensor
    candidate = structured(facts, (2, 3))  # the kernel's rank is the uniform shape's, as searched
    x, kernel = materialize(candidate)
    assert isinstance(x, np.ndarray) and x.ndim == 4
    assert isinstance(kernel, list) and np.shape(kernel) == candidate[1].shape and len(np.shape(kernel)) == 2
    assert candidate[1].describe().startswith("a list [")
    assert _facts("first_made_array", ["x"]).kind == {}  # the data itself: a tensor, never a list


def test_noise_shaped_after_a_dimension_gives_the_rank_and_a_reshape_does_not():
    assert _facts("gated", ["x", "low"]).min_rank == {"x": 4}
    assert _facts("flattened", ["x"]).min_rank == {"x": 1}  # a reshape changes the rank: no sign


def test_tile_s_first_argument_is_data_and_its_multiples_are_ints():
    facts = _facts("tiled", ["x", "n"])
    assert facts.kind == {"n": "int"}


def test_a_function_that_pools_or_strides_gets_even_sizes():
    assert _facts("pooled", ["x"]).strided and not _facts("conv_only", ["x", "k"]).strided
    facts = _facts("kernel_list", ["x", "kernel"])
    assert not facts.strided  # strides of one
    facts = _facts("pooled", ["x"])
    facts.rank["x"] = facts.min_rank["x"] = 4
    assert all(d % 2 == 0 for d in structured(facts, ())[0].shape)


tf = pytest.importorskip("tensorflow")


def _load():
    spec = importlib.util.spec_from_file_location("_cg_fixture_image_ops", FIXTURES / "image_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.tf
def test_runtime_check_finds_the_inputs_and_reports_nothing(cli):
    text = cli("image_ops.py").stdout
    assert "4 function(s) checked, 0 finding(s)" in text
    # on a vector, the noise [n, 1, 1, 1] would raise the output's rank and the gradient's
    (row,) = [line for line in text.splitlines() if line.startswith("image_ops.py:per_example_scale ")]
    assert row.split()[1:3] == ["ok", "x:"] and "x: float32[2,3,4,5]" in row
    assert "image_ops.py:smooth.<locals>.func      ok      x: float32[2,4,6,8], kernel: a list [2,3]" in text
    assert "image_ops.py:upsample.<locals>.func    ok      x: float32[2,3,4,5]" in text
    assert "image_ops.py:downsample.<locals>.func  ok      x: float32[2,4,6,8]" in text


@pytest.mark.tf
@pytest.mark.parametrize("traced", [False, True], ids=["eager", "tf.function"])
def test_on_tensorflow_even_sizes_fit_and_an_odd_width_does_not(traced):
    """Why made-up sizes are even for a function that halves: on an odd width, SAME padding
    rounds the half up and the gradient of doubling it back is one column too wide, eagerly and
    traced; a finding there would be about a call the function is not written for."""
    m = _load()

    def grad_shape(fn, x, *extra):
        def run(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x, *extra)
            return tape.gradient(y, x)
        return tuple((tf.function(run) if traced else run)(x).shape)

    x = tf.reshape(tf.range(2 * 4 * 6 * 8, dtype=tf.float32), (2, 4, 6, 8)) / 100.0
    assert grad_shape(m.downsample, x) == (2, 4, 6, 8)
    assert grad_shape(m.upsample, x) == (2, 4, 6, 8)
    assert grad_shape(m.smooth, x, [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0]]) == (2, 4, 6, 8)
    assert grad_shape(m.downsample, x[..., :7]) == (2, 4, 6, 8)  # for an input of width 7
