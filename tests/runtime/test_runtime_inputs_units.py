"""Input discovery without TensorFlow: what the source says, what TF's errors ask for, broadcasting."""

from __future__ import annotations

import ast
import textwrap

import pytest

from runtime_check.inputs.assign import Slot, materialize, structured
from runtime_check.inputs.broadcast import broadcast_parameters, expands, widened
from runtime_check.inputs.hints import call_sites, facts_for, find_function
from runtime_check.inputs.repair import repairs, short_reason

SOURCE = textwrap.dedent('''
    import tensorflow as tf

    @tf.custom_gradient
    def dense(x, w, b):
        return tf.matmul(x, w) + b, lambda dy: (dy, dy, dy)

    @tf.custom_gradient
    def bilinear(x, a, y):
        return tf.einsum("bi,ij,bj->b", x, a, y), None

    @tf.custom_gradient
    def embed(table, ids):
        return tf.gather(table, ids), None

    @tf.custom_gradient
    def repeat(x, n):
        for _ in range(n):
            x = x * 2.0
        return x, None

    @tf.custom_gradient
    def last_axis(x, axis):
        d = x.shape[-1]
        return tf.reduce_sum(x, axis=axis) / d, None

    @tf.custom_gradient
    def solve(m, v):
        return tf.linalg.cholesky_solve(tf.linalg.cholesky(m), v), None

    def caller():
        x = tf.ones([4, 3])
        return dense(x, tf.zeros((3, 2)), 0.5)
''')


def _facts(name: str, params: list[str]):
    tree = ast.parse(SOURCE)
    return facts_for(find_function(tree, name), params)


def test_matmul_relates_the_inner_dimension_and_shapes_are_distinct_elsewhere():
    facts = _facts("dense", ["x", "w", "b"])
    assert facts.min_rank == {"x": 2, "w": 2}
    x, w, b = structured(facts, (3,))
    assert x.shape[-1] == w.shape[-2] and len({x.shape[0], x.shape[1], w.shape[1]}) == 3
    assert b == Slot("tensor", (3,), "float32")  # nothing known: the uniform shape, repaired later


def test_einsum_gives_ranks_and_shared_letters():
    x, a, y = structured(_facts("bilinear", ["x", "a", "y"]), None)
    assert x.shape[1] == a.shape[0] and a.shape[1] == y.shape[1] and x.shape[0] == y.shape[0]


def test_gather_ids_are_integer_indices_below_the_table_size():
    table, ids = structured(_facts("embed", ["table", "ids"]), (3,))
    assert ids.kind == "index" and ids.dtype == "int32" and ids.bound == table.shape[0]
    values = materialize((table, ids))[1]
    assert values.dtype.name == "int32" and values.max() < table.shape[0]


def test_python_values_from_range_axis_and_shape_uses():
    assert structured(_facts("repeat", ["x", "n"]), ())[1] == Slot("python", value=2)
    facts = _facts("last_axis", ["x", "axis"])
    assert facts.min_rank["x"] == 1 and facts.kind["axis"] == "int"
    assert structured(facts, ())[1].value == -1


def test_square_positive_definite_matrices():
    facts = _facts("solve", ["m", "v"])
    m = structured(facts, (3,))[0]
    assert m.shape[-1] == m.shape[-2] and m.spd
    import numpy as np

    assert np.all(np.linalg.eigvalsh(materialize((m,))[0]) > 0)


def test_call_site_literal_shapes_through_local_bindings():
    (site,) = call_sites(ast.parse(SOURCE), "dense", 3)
    assert [s.shape if not s.python else s.value for s in site] == [(4, 3), (3, 2), 0.5]


@pytest.mark.parametrize("message, before, after", [
    ("Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3] [Op:MatMul]", ((2, 3), (2, 3)), (2, 3)),
    ("Incompatible shapes: [2,4] vs. [3] [Op:AddV2]", ((2, 4), (3,)), (4,)),
    ("Input to reshape is a tensor with 3 values, but the requested shape has 20 [Op:Reshape]", ((3,),), (20,)),
    ("In[0] and In[1] has different ndims: [3] vs. [2,3] [Op:MatMul]", ((3,), (2, 3)), (2, 3)),
])
def test_repairs_read_tensorflow_messages(message, before, after):
    candidate = tuple(Slot("tensor", s) for s in before)
    fixes, reason = repairs(message, candidate)
    assert any(after in [s.shape for s in fix] and fix != candidate for fix in fixes), (fixes, reason)


def test_integer_and_python_int_repairs_and_reasons_in_our_words():
    candidate = (Slot("tensor", (2, 3)), Slot("tensor", (3,)))
    fixes, reason = repairs("Value for attr 'Tindices' of float is not in the list of allowed values", candidate)
    assert fixes[0][1].kind == "index" and reason == "integer indices"
    fixes, _ = repairs("'numpy.float32' object has no attribute '__index__'", (Slot("tensor", (2,)), Slot("tensor")))
    assert fixes[0][1] == Slot("python", value=2)
    assert short_reason(ValueError("Condition x == y did not hold")) == "ValueError in the forward"


def test_broadcast_test_tells_expansion_from_a_bias():
    assert expands((), (4,)) and expands((1, 4), (3, 4))
    assert not expands((4,), (2, 4))  # a bias over the batch: meant
    assert not expands((3,), (4,))
    assert broadcast_parameters({"x": ()}, [(4,)], [(4,)]) == ["x"]
    assert broadcast_parameters({"x": (2, 3), "w": (3, 4), "b": (4,)}, [(2, 4)], []) == []
    assert widened((), [(2, 4)], []) == [(4,), (2, 4)]
