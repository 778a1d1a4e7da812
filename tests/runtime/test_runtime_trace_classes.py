"""One traced run per class of input sets (rank and dtype kind), every set run eagerly; real TF."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.tf


def _counting_function():
    import tensorflow as tf

    from runtime_check.checked import checked_custom_gradient

    calls = {"eager": 0, "traced": 0}

    @checked_custom_gradient
    def scaled(x):
        calls["eager" if tf.executing_eagerly() else "traced"] += 1

        def grad(dy):
            return 2.0 * dy

        return 2.0 * x, grad

    return scaled, calls


@pytest.mark.parametrize("source, traced", [("probe", 3), ("config", 6)])
def test_traced_once_per_rank_and_dtype_kind(source: str, traced: int):
    from runtime_check.exercise import Exerciser, Options
    from runtime_check.issues import RECORDER, definition_info
    from runtime_check.probes import synthesized

    function, calls = _counting_function()
    sets = synthesized(["x"])  # float32 and float64, each of rank 0, 1 and 2
    for s in sets:
        s.source = source
    RECORDER.drain()
    exerciser = Exerciser(
        lambda: function, ["x"], definition_info(function), Options(magnitudes=False)
    )
    outcome = exerciser.run(sets)
    issues, _ = RECORDER.drain()
    assert outcome.used == [s.label for s in sets]  # every set accepted, each run eagerly
    assert calls["eager"] == 6 + 1  # and one forward more, for the upstream linearity check (CG110)
    # probes: float64 adds no rank or dtype kind to float32's; declared inputs are all traced
    assert calls["traced"] == traced
    assert issues == []


def test_graph_only_defect_still_found_with_fewer_traces():
    import tensorflow as tf

    from runtime_check.checked import checked_custom_gradient
    from runtime_check.exercise import Exerciser, Options
    from runtime_check.issues import RECORDER, definition_info
    from runtime_check.probes import synthesized

    @checked_custom_gradient
    def numpy_in_grad(x):
        def grad(dy):
            return dy * float(tf.reduce_sum(x).numpy())  # no .numpy() on a symbolic tensor

        return x * 1.0, grad

    RECORDER.drain()
    info = definition_info(numpy_in_grad)
    Exerciser(lambda: numpy_in_grad, ["x"], info, Options(magnitudes=False)).run(synthesized(["x"]))
    issues, _ = RECORDER.drain()
    assert issues and all("tf.function" in i.mode for i in issues), issues
