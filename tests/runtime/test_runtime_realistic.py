"""Realistic custom gradients, checked with no configuration (real TensorFlow).

``fixtures/realistic/correct_ops.py`` holds correct dense, conv, attention, embedding, bilinear,
per-channel-scale, factory, straight-through, gradient-reversal and Keras-layer backward passes;
``defective_ops.py`` the same kinds with one seeded defect each. Every defect must be reported with
its own code, and nothing at all on the correct module (CG130 included).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

REALISTIC = Path(__file__).resolve().parent / "fixtures" / "realistic"

SEEDED = {
    "dense_transposed_dw": ("CG101", "gradient for input 'w' has shape (4, 3) but the input has shape (3, 4)"),
    "dense_kept_db": ("CG101", "gradient for input 'b' has shape (1, 4) but the input has shape (4,)"),
    "conv_float64_dx": ("CG102", "gradient for input 'x' has dtype float64 but the input is float32"),
    "attention_numpy_grad": ("CG010", "confirmed at runtime under tf.function"),
    "embed_no_table_grad": ("CG104", "None for floating input 'table'"),
    "bilinear_unsummed": ("CG101", "gradient for input 'a' has shape (2, 3, 4) but the input has shape (3, 4)"),
    "scale": ("CG101", "gradient for input 'w' has shape (4, 3) but the input has shape (3,)"),
    "channel_scale_unreduced": ("CG101",
                                "gradient for variable 'gain' has shape (2, 4) but the variable has shape (4,)"),
    "naive_logsumexp": ("CG105", "NaN/Inf where the forward is finite"),
    "exp_on_half_line": ("CG105", "NaN/Inf where the forward is finite"),
    "make_reversal.<locals>.reverse": ("CG101", "has shape () but the input has shape"),
    "binarize_python_if": ("CG009", "confirmed at runtime under tf.function"),
    "PairDense.call.<locals>.project": ("CG007", "variable gradients differ between eager and tf.function"),
    # no call site: found by trying gamma and beta broadcast over x (opt-in: --broadcast-shapes)
    "affine_unreduced": ("CG111", "has shape (2, 3) but the input has shape (3,) (only with a parameter broadcast"),
}


@pytest.fixture(scope="module")
def realistic(cli):
    from conftest import Results

    # with the opt-in broadcast shapes: the correct module stays silent under them too
    return Results(cli("--format", "json", "--broadcast-shapes", "correct_ops.py", "defective_ops.py", cwd=REALISTIC))


@pytest.fixture(scope="module")
def correct_text(cli):
    return cli("correct_ops.py", cwd=REALISTIC)


def test_every_seeded_defect_is_reported_with_its_own_code(realistic):
    assert realistic.completed.returncode == 1, realistic.completed.stderr[-2000:]
    missing = []
    for function, (code, text) in SEEDED.items():
        found = [f for f in realistic.of(function, "defective_ops.py") if f["code"] == code]
        if not found or text not in found[0]["message"]:
            missing.append((function, code, realistic.of(function, "defective_ops.py")))
    assert not missing, missing
    # nothing the search could not reach, nothing beyond the seeded defect's own consequences
    assert not [f for f in realistic.findings if f["code"] == "CG130"]
    for function, (code, _) in SEEDED.items():
        extra = realistic.codes(function, "defective_ops.py") - {code}
        assert extra <= ({"CG101"} if code == "CG007" else set()), (function, extra)


def test_correct_module_gets_no_finding_at_all(realistic, correct_text):
    assert [f for f in realistic.findings if f["path"].endswith("correct_ops.py")] == []
    out = correct_text.stdout
    assert correct_text.returncode == 0, out + correct_text.stderr
    rows = [ln for ln in out.splitlines() if ln.startswith("correct_ops.py:")]
    assert len(rows) == 21 and all(ln.split()[1] == "ok" for ln in rows), out
    assert out.rstrip().endswith("21 function(s) checked, 0 finding(s)")


@pytest.mark.parametrize("function, inputs", [
    ("dense", "x: float32[2,3], w: float32[3,4], b: float32[4]"),
    ("conv", "x: float32[2,3,4,5], kernel: float32[6,7,5,8]"),
    ("attention", "q: float32[2,3], k: float32[4,3], v: float32[4,6]"),
    ("embed", "table: float32[2,3], ids: int32[4]"),
    ("bilinear", "x: float32[2,3], a: float32[3,4], y: float32[2,4]"),
    ("channel_scale", "x: float32[4]"),
    ("make_reversal.<locals>.reverse", "x: float32[]"),
    ("ScaledDense.call.<locals>.project", "inputs: float32[2,"),
    # the gradients reduce over the batch: the inputs they are written for replace equal shapes
    ("channel_gain", "x: float32[2,3], w: float32[3]; +1 more"),
    ("scale_shift", "x: float32[2,3], gamma: float32[3], beta: float32[3]; +1 more"),
    # correct for any broadcast: equal shapes first, the broadcast ones checked too
    ("broadcast_multiply", "x: float32[], y: float32[]; +4 more"),
    ("outer", "x: float32[], y: float32[]; +3 more"),
    ("project", "x: float32[2,3], w: float32[3,4]; +1 more"),
])
def test_inputs_found_from_the_source_are_reported(correct_text, function, inputs):
    (row,) = [ln for ln in correct_text.stdout.splitlines() if ln.startswith(f"correct_ops.py:{function} ")]
    assert inputs in row, row


def test_call_site_shapes_are_used(realistic):
    (finding,) = realistic.of("scale", "defective_ops.py")
    assert "inputs x: float32[4,3], w: float32[3]" in finding["message"]


def test_without_a_call_site_each_later_parameter_is_tried_broadcast_over_the_first(realistic):
    by_input = {f["message"].split("'")[3]: f["message"] for f in realistic.of("affine_unreduced", "defective_ops.py")}
    assert set(by_input) == {"gamma", "beta"}, by_input
    how = "; guessed, with a parameter applied as a bias or scale]"  # and the finding says how they came
    assert f"inputs x: float32[2,3], gamma: float32[3], beta: float32[2,3]{how}" in by_input["gamma"]
    assert f"inputs x: float32[2,3], gamma: float32[2,3], beta: float32[3]{how}" in by_input["beta"]


def test_a_module_without_custom_gradients_says_so_in_one_line(tmp_path: Path, cli):
    (tmp_path / "plain.py").write_text("import tensorflow as tf\n\n\ndef double(x):\n    return 2 * x\n")
    completed = cli("plain.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == ["no custom gradients found in 1 module(s)"]


def _functions_from(path: Path, names: set[str]) -> str:
    """The source of the named top-level functions of a fixture, decorators included."""
    import ast

    text = path.read_text(encoding="utf-8")
    nodes = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name in names]
    lines = text.splitlines()
    return "\n\n\n".join("\n".join(lines[n.decorator_list[0].lineno - 1: n.end_lineno]) for n in nodes)


def test_the_broadcast_inputs_show_the_same_under_tf_function(tmp_path: Path, cli):
    # The search checks its broadcast variants eagerly only (a gradient's shape shows there). Declared,
    # the same inputs are traced too: the defect is reported in both modes, the correct ones in neither.
    (tmp_path / "broadcast_ops.py").write_text(
        "import tensorflow as tf\n\n\n" + _functions_from(REALISTIC / "defective_ops.py", {"affine_unreduced"})
        + "\n\n\n" + _functions_from(REALISTIC / "correct_ops.py", {"channel_gain", "scale_shift"}) + "\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cg_lint.runtime.functions."broadcast_ops:affine_unreduced"]\n'
        'inputs = [{shape = [2, 3]}, {shape = [3]}, {shape = [2, 3]}]\n'
        '[tool.cg_lint.runtime.functions."broadcast_ops:channel_gain"]\n'
        'inputs = [{shape = [2, 3]}, {shape = [3]}]\n'
        '[tool.cg_lint.runtime.functions."broadcast_ops:scale_shift"]\n'
        'inputs = [{shape = [2, 3]}, {shape = [3]}, {shape = [3]}]\n')
    from conftest import Results

    results = Results(cli("--format", "json", "broadcast_ops.py", cwd=tmp_path))
    (finding,) = results.findings
    assert finding["code"] == "CG101" and finding["mode"] == "eager, tf.function", finding
    assert "'affine_unreduced': gradient for input 'gamma' has shape (2, 3) but the input has shape (3,)" \
        in finding["message"]
