"""Every runtime-check finding names its inputs and how they were chosen (on real TensorFlow runs)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cg_lint.findings import Finding
from runtime_check.inputs.hints import Facts
from runtime_check.inputs.search import hints_origin

ROOT = Path(__file__).resolve().parents[2]

# sums the gradient of a per-feature scale over nothing: wrong for the call below
UNREDUCED_SCALE = '''\
import tensorflow as tf


@tf.custom_gradient
def scale(x, w):
    def grad(dy):
        return dy * w, dy * x
    return x * w, grad
'''


def _json(cli, *args: str, cwd: Path = ROOT) -> list[dict]:
    completed = cli("--format", "json", *args, cwd=cwd)
    assert completed.returncode == 1, completed.stdout[-2000:] + completed.stderr[-2000:]
    return json.loads(completed.stdout)


def _one(findings: list[dict], function: str, code: str) -> dict:
    (finding,) = [f for f in findings if f["function"] == function and f["code"] == code]
    return finding


def _tail(finding: dict) -> str:
    return finding["message"][finding["message"].rindex(" [") + 2:-1]


@pytest.mark.tf
def test_call_site_inputs_say_which_call(cli):
    findings = _json(cli, "tests/runtime/fixtures/realistic/defective_ops.py")
    finding = _one(findings, "scale", "CG101")
    origin = "from the call at tests/runtime/fixtures/realistic/defective_ops.py:71"
    assert _tail(finding) == f"eager, tf.function; inputs x: float32[4,3], w: float32[3]; {origin}"
    assert (finding["inputs"], finding["origin"]) == ("x: float32[4,3], w: float32[3]", origin)
    line = (ROOT / "tests/runtime/fixtures/realistic/defective_ops.py").read_text().splitlines()[70]
    assert "scale(" in line  # the line named really is the call
    # hints from the body, when no call shows the shapes
    dense = _one(findings, "dense_transposed_dw", "CG101")
    assert dense["origin"] == "from the source's hints (x: matmul(); w: matmul()), fitted to the forward's errors"


@pytest.mark.tf
def test_guessed_inputs_say_so_and_layers_name_their_build(cli):
    findings = _json(cli, "examples/runtime")
    clip = _one(findings, "leaky_clip", "CG101")
    assert _tail(clip) == "eager, tf.function; inputs x: float32[3]; guessed"
    assert clip["origin"] == "guessed"
    softplus = _one(findings, "softplus", "CG105")  # a magnitude probe keeps its base's origin
    assert _tail(softplus) == "eager; inputs x: float32[] filled with 100; guessed"
    layer = _one(findings, "ScaleShift.call.<locals>.scale_shift", "CG007")
    assert _tail(layer).endswith("; inputs x: float32[2]; guessed, fitted to the forward's errors; "
                                 "weights from the layer's build(input_shape)")
    assert layer["origin"].endswith("; weights from the layer's build(input_shape)")
    # plain functions are not layers
    assert "build(input_shape)" not in clip["message"] + softplus["message"]


@pytest.mark.tf
def test_a_call_in_a_nearby_test_names_the_test(cli, tmp_path: Path):
    (tmp_path / "ops.py").write_text(UNREDUCED_SCALE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text(textwrap.dedent('''\
        import tensorflow as tf
        from ops import scale


        def test_scale_per_feature():
            x = tf.ones([4, 3])
            w = tf.ones([3])
            assert scale(x, w).shape == (4, 3)
        '''))
    findings = _json(cli, "ops.py", cwd=tmp_path)
    finding = _one(findings, "scale", "CG101")
    assert finding["origin"] == "from the test tests/test_ops.py::test_scale_per_feature (line 8)"
    assert _tail(finding) == f"eager, tf.function; inputs x: float32[4,3], w: float32[3]; {finding['origin']}"


@pytest.mark.tf
def test_declared_inputs_say_so(cli, tmp_path: Path):
    (tmp_path / "ops.py").write_text(UNREDUCED_SCALE)
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.cg_lint.runtime.functions."ops:scale"]
        inputs = [{shape = [4, 3]}, {shape = [3]}]
        '''))
    findings = _json(cli, "ops.py", cwd=tmp_path)
    finding = _one(findings, "scale", "CG101")
    assert _tail(finding) == "eager, tf.function; inputs x: float32[4,3], w: float32[3]; declared in the configuration"


def test_hints_are_named_in_parameter_order_and_capped():
    facts = Facts(["a", "b", "c", "d", "e"])
    assert hints_origin(facts) == "guessed"
    for name in ("e", "c", "a", "b"):
        facts.need_rank(name, 2, f"{name}()")
    assert hints_origin(facts) == "from the source's hints (a: a(); b: b(); c: c(); +1 more)"


def test_static_json_has_no_runtime_fields_and_runtime_ones_round_trip():
    static = Finding("m.py", 1, 1, "CG001", "msg")
    assert "inputs" not in static.to_json() and "origin" not in static.to_json()
    runtime = Finding("m.py", 1, 1, "CG101", "msg [eager; inputs x: float32[3]; guessed]", mode="eager",
                      inputs="x: float32[3]", origin="guessed")
    assert Finding.from_json(json.loads(json.dumps(runtime.to_json()))) == runtime
