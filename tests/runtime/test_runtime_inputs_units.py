"""Input discovery without TensorFlow: what the source says, what TF's errors ask for, broadcasting."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest

from runtime_check.inputs.assign import Slot, materialize, structured
from runtime_check.inputs.broadcast import applied_shapes, broadcast_parameters, expands, widened
from runtime_check.inputs.channels import per_channel
from runtime_check.inputs.hints import call_sites, facts_for, find_function
from runtime_check.inputs.repair import repairs, short_reason
from runtime_check.inputs.search import Observation, applied_variants, search

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
    return facts_for(find_function(tree, name), params, finish=per_channel)


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


# -- parameters broadcast as a bias or per-channel scale is ---------------------------------------
# The forward and the hand-written gradient below are plain NumPy: broadcasting, the errors on
# shapes that do not meet, and the gradients' shapes are NumPy's own, as TensorFlow's would be.


def _numpy_attempt(forward, backward, calls: list):
    """A search ``attempt`` over a NumPy forward; ``backward(dy, *args)`` is the hand-written grad."""
    def attempt(args, gradients=False):
        calls.append([np.shape(a) for a in args])
        out = forward(*args)  # raises on shapes that do not broadcast, as TF's ops do
        fits = None
        if gradients:
            grads = backward(np.ones_like(out), *args)
            fits = [np.shape(g) == np.shape(a) for g, a in zip(grads, args)]
        return Observation([np.shape(out)], [], fits)
    return attempt


def _matmul(a, b):
    if np.ndim(a) != 2 or np.ndim(b) != 2:
        raise ValueError("In[0] and In[1] must be matrices")
    return a @ b


NUMPY_FUNCTIONS = {
    # name: (forward, backward)
    "unreduced_scale": (lambda x, w: x * w, lambda dy, x, w: (dy * w, dy * x)),
    "reduced_scale": (lambda x, w: x * w,
                      lambda dy, x, w: (dy * w, np.sum(dy * x, axis=0) if np.ndim(x) > np.ndim(w) else dy * x)),
    "reduced_scale_axis0_only": (lambda x, w: x * w, lambda dy, x, w: (dy * w, np.sum(dy * x, axis=0))),
    "outer": (np.multiply.outer,
              lambda dy, x, y: (np.tensordot(dy, y, np.ndim(y)), np.tensordot(x, dy, (list(range(np.ndim(x))),) * 2))),
    "matmul": (_matmul, lambda dy, x, w: (dy @ w.T, x.T @ dy)),
    "affine_reduced": (lambda x, g, b: x * g + b,
                       lambda dy, x, g, b: (dy * g, np.sum(dy * x, axis=0), np.sum(dy, axis=0))),
    "affine_unreduced": (lambda x, g, b: x * g + b, lambda dy, x, g, b: (dy * g, dy * x, dy)),
}


def _search(name: str, params: list[str], source: str | None = None):
    """The search over a NumPy function; ``source``: a def whose body gives the facts."""
    forward, backward = NUMPY_FUNCTIONS[name]
    calls: list = []
    tree = ast.parse(textwrap.dedent(source or f"def {name}(): pass"))
    facts = facts_for(find_function(tree, name) if source else None, params, finish=per_channel)
    found = search(_numpy_attempt(forward, backward, calls), params, facts, [])

    def shapes(candidates):  # the float32 input sets (the float64 copy of the first aside)
        return [tuple(s.shape for s in c) for c in candidates if all(s.dtype == "float32" for s in c)]
    return found, shapes(found.accepted), shapes(found.applied), calls


def test_applied_shapes_are_the_trailing_dimensions_of_a_larger_tensor_met():
    assert applied_shapes((2, 4, 3), [(2, 4, 3)]) == [(4, 3), (3,)]
    assert applied_shapes((4, 3), [(4, 3), (3,)]) == [(3,)]
    assert applied_shapes((3, 4), [(2, 3)]) == []  # w of a matmul meets x: [4] is no trailing part of it
    assert applied_shapes((3,), [(2, 3)]) == []  # already a vector: nothing left to drop
    assert applied_shapes((2, 3), [(2, 3), ()]) == [(3,)]
    assert applied_shapes((2, 3), [(3,)]) == []  # only a larger tensor can broadcast it


def test_applied_variants_keep_the_first_tensor_and_vary_only_later_floating_tensors():
    base = (Slot("python", value=2), Slot("tensor", (2, 3)), Slot("tensor", (2, 3)), Slot("index", (2, 3), "int32"),
            Slot("tensor", (3, 3), spd=True), Slot("tensor", (2, 3)))
    observed = Observation([(2, 3)], [])
    varied = [[s.shape for s in v] for v in applied_variants(list("nxwisb"), base, observed)]
    assert varied == [[(), (2, 3), (3,), (2, 3), (3, 3), (2, 3)], [(), (2, 3), (2, 3), (2, 3), (3, 3), (3,)]]
    # a single tensor parameter has nothing to be broadcast against
    assert applied_variants(["x"], (Slot("tensor", (2, 3)),), observed) == []
    # a captured variable is met too
    var = applied_variants(["x", "w"], (Slot("tensor", (2, 4)), Slot("tensor", (5, 4))), Observation([(2, 4)], [(7, 5, 4)]))
    assert [v[1].shape for v in var] == [(4,)]


def test_an_unreduced_scale_gradient_gets_the_broadcast_inputs_checked_too():
    found, accepted, applied, _ = _search("unreduced_scale", ["x", "w"])
    assert accepted[0] == ((), ())  # the first inputs broadcast nothing; the report shows them
    assert applied == [((2, 3), (3,))]  # x is the data: only w is broadcast over it


def test_a_reduced_scale_gradient_is_checked_as_written_and_equal_shapes_stay_accepted():
    found, accepted, applied, _ = _search("reduced_scale", ["x", "w"])
    assert ((2, 3), (2, 3)) in accepted and applied == [((2, 3), (3,))]


def test_a_gradient_that_fits_only_when_broadcast_replaces_the_full_shape_inputs():
    # reduce_sum(dy * x, axis=0) is written for w: [c] with x: [n, c]; with equal shapes its
    # gradient would not fit, which describes a call the function is not meant for
    found, accepted, applied, _ = _search("reduced_scale_axis0_only", ["x", "w"])
    assert accepted == [((2, 3), (3,))] and applied == []
    assert [s.dtype for s in found.accepted[-1]] == ["float64", "float64"]  # plus the first in float64
    # findings on them say so, the float64 copy as well
    assert {found.origin(c) for c in found.accepted} == {"guessed, fitted to the gradient's shapes"}
    found, accepted, applied, _ = _search("affine_reduced", ["x", "gamma", "beta"])
    assert accepted[0] == ((2, 3), (3,), (3,)) and applied == []  # both broadcast together


def test_each_unreduced_parameter_is_varied_on_its_own():
    found, accepted, applied, _ = _search("affine_unreduced", ["x", "gamma", "beta"])
    assert accepted[0] == ((), (), ())
    assert applied == [((2, 3), (3,), (2, 3)), ((2, 3), (2, 3), (3,))]
    assert found.origin(found.accepted[0]) == "guessed"
    assert {found.origin(c) for c in found.applied} == {"guessed, with a parameter applied as a bias or scale"}


@pytest.mark.parametrize("name, source", [
    ("outer", None),
    ("matmul", "def matmul(x, y):\n    return tf.matmul(x, y), None\n"),
])
def test_no_variant_when_the_output_shape_changes_or_the_forward_rejects_it(name, source):
    found, accepted, applied, calls = _search(name, ["x", "y"], source)
    assert accepted and applied == []
    if name == "matmul":  # y: [3, 4] meets the output [2, 4]; as [4] the forward rejects it
        assert accepted[0] == ((2, 3), (3, 4)) and [(2, 3), (4,)] in calls


def test_the_variants_cost_a_bounded_number_of_forward_calls():
    from runtime_check.inputs.search import APPLIED

    found, _, _, calls = _search("affine_unreduced", ["x", "gamma", "beta"])
    without, _, _, base_calls = _search("outer", ["x", "y"])
    assert len(calls) == found.tries + 1  # + the float64 copy of the first
    assert 0 < len(calls) - (len(found.accepted) + 1) <= APPLIED
    assert len(base_calls) <= without.tries + 1
