"""Rule examples proven on TensorFlow: each INVALID example with a ``# tf:`` line fails (or gives a
wrong gradient) as its line says, eagerly and/or under tf.function; each such VALID example runs
in both modes.

``# tf: <thunk> => <clauses>``: clauses separated by ``;``, each ``eager|graph|both`` then ``ok``,
``ok <text>`` (the result contains it), ``raises <text>`` (the error contains it) or ``wrong <text>``
(it runs, and the result is not the true one, ``<text>``). All scenarios run in one subprocess
(tests/tf_examples_driver.py).
"""

from __future__ import annotations

import sys

import pytest

from lint_helpers import ROOT, tf_driver_outcomes

sys.path.insert(0, str(ROOT / "tests"))
from tf_examples import examples  # noqa: E402

pytestmark = pytest.mark.tf
CASES = {key: (source, call, expect) for key, source, call, expect in examples()}


@pytest.fixture(scope="module")
def outcomes() -> dict:
    return tf_driver_outcomes("tf_examples_driver.py", timeout=600)


def clauses(expect: str) -> list[tuple[str, str, str]]:
    out = []
    for clause in expect.split(";"):
        mode, verb, *rest = clause.split(None, 2)
        assert mode in ("eager", "graph", "both") and verb in ("ok", "raises", "wrong"), clause
        for m in (("eager", "graph") if mode == "both" else (mode,)):
            out.append((m, verb, rest[0] if rest else ""))
    return out


@pytest.mark.parametrize("key", sorted(CASES))
def test_example_behaves_on_tensorflow_as_its_line_says(outcomes: dict, key: str) -> None:
    result = outcomes[key]
    for mode, verb, text in clauses(CASES[key][2]):
        got = result[mode]
        if verb == "ok":
            assert got.startswith("OK") and text in got, (mode, got)
        elif verb == "raises":
            assert got.startswith("RAISES") and text in got, (mode, got)
        else:
            assert got.startswith("OK") and got != f"OK {text}", (mode, got)


@pytest.mark.parametrize("key", sorted(CASES))
def test_invalid_examples_fail_and_valid_ones_run_in_both_modes(key: str) -> None:
    verbs = {(mode, verb) for mode, verb, _ in clauses(CASES[key][2])}
    if "-invalid-" in key:
        assert any(verb in ("raises", "wrong") for _, verb in verbs), "an INVALID example must show the failure"
    else:
        assert verbs == {("eager", "ok"), ("graph", "ok")}, "a VALID example must run in both modes"


def test_examples_are_proven() -> None:
    # the examples written for the generalised rules carry their proof; keep it that way
    assert len([k for k in CASES if "-invalid-" in k]) >= 25
    assert len([k for k in CASES if "-valid-" in k]) >= 8
