"""The rules describe real failures: their doc examples fail on TensorFlow as the messages say.

All scenarios run in one subprocess (tests/tf_repro_driver.py), so TensorFlow is imported once and
never in the process that tests the linter.
"""

from __future__ import annotations

import pytest

from lint_helpers import tf_driver_outcomes

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def outcomes() -> dict:
    return tf_driver_outcomes("tf_repro_driver.py", timeout=300)


def _ok(result: str) -> bool:
    return result.startswith("OK")


@pytest.mark.parametrize(("code", "error"), [
    ("CG009", "OperatorNotAllowedInGraphError: Using a symbolic `tf.Tensor` as a Python `bool`"),
    ("CG010", "Cannot convert a symbolic tf.Tensor"),
    ("CG012", "OperatorNotAllowedInGraphError"),
    ("CG008", "supports keywords arguments only when eager execution is enabled"),
    ("CG018", "Tensor.graph is undefined when eager execution is enabled"),
])
def test_works_eagerly_and_fails_under_tf_function(outcomes: dict, code: str, error: str) -> None:
    result = outcomes[code]
    assert _ok(result["eager"]), result
    assert result["graph"].startswith("RAISES") and error in result["graph"], result


@pytest.mark.parametrize(("code", "error"), [
    ("CG004", "must accept keyword argument 'variables'"),
    ("CG006", 'can only concatenate list (not "tuple")'),
])
def test_fails_in_both_modes(outcomes: dict, code: str, error: str) -> None:
    for mode in ("eager", "graph"):
        assert error in outcomes[code][mode], outcomes[code]


def test_cg005_return_without_variable_grads_fails_without_mentioning_variables(outcomes: dict) -> None:
    for mode in ("eager", "graph"):
        result = outcomes["CG005"][mode]
        assert result.startswith("RAISES") and "variables" not in result, result


def test_cg008_keyword_tensor_breaks_eager_gradients_too(outcomes: dict) -> None:
    # `scale` by keyword is no input of the custom gradient: grad's two gradients no longer fit
    assert "expected to return 1 gradients, but returned 2" in outcomes["CG008-eager-keyword-tensor"]["eager"]


def test_cg011_vector_predicate_fails_eagerly_and_when_the_graph_runs(outcomes: dict) -> None:
    result = outcomes["CG011"]
    assert "truth value of an array with more than one element is ambiguous" in result["eager"]
    assert result["graph"].startswith("RAISES InvalidArgumentError"), result


def test_cg007_positional_variable_grads_are_silently_wrong(outcomes: dict) -> None:
    truth = "OK [3.0, 1.0]"  # d(x*w + b)/dw = x = 3, d/db = 1
    wrong = outcomes["CG007"]
    # never an error; under tf.function `variables` is sorted by name (b, w), so the grads swap
    assert all(_ok(r) for r in wrong["eager"]) and _ok(wrong["graph"])
    assert wrong["graph"] != truth or any(r != truth for r in wrong["eager"]), wrong
    fixed = outcomes["CG007-use-instead"]
    assert fixed["graph"] == truth and all(r == truth for r in fixed["eager"]), fixed


@pytest.mark.parametrize("code", ["CG010", "CG018"])
def test_use_instead_works_in_both_modes(outcomes: dict, code: str) -> None:
    fixed = outcomes[f"{code}-use-instead"]
    assert _ok(fixed["eager"]) and _ok(fixed["graph"]), fixed
    assert fixed["eager"] == fixed["graph"]
