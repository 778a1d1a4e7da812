"""Every runtime check, eagerly and under tf.function, on fixture modules (real TensorFlow)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

DEFECTS = "defects.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_run_reports_findings_and_exits_1(main_run):
    assert main_run.completed.returncode == 1, main_run.completed.stderr[-2000:]
    assert main_run.completed.stderr.strip() == "" or "Traceback" not in main_run.completed.stderr


def test_json_objects_have_the_documented_keys(main_run):
    for finding in main_run.findings:
        assert {"path", "line", "column", "code", "message", "function"} <= set(finding)
        assert finding["line"] >= 1 and finding["column"] >= 1
        assert "\n" not in finding["message"]


@pytest.mark.parametrize(
    "function, code, expected_text",
    [
        ("wrong_count", "CG003", "returns 1 gradient(s) for 2 input(s) (x, y)"),
        ("scalar_grad", "CG101", "has shape () but the input has shape (3,)"),
        ("float64_grad", "CG102", "has dtype float64 but the input is float32"),
        ("python_float_grad", "CG103", "Python float"),
        ("numpy_grad", "CG103", "NumPy array"),
        ("none_for_float", "CG104", "None for floating input 'y'"),
        ("variable_grads_tuple", "CG006", "must be a list"),
        ("returns_triple", "CG001", "returned a tuple of 3"),
        ("packed_upstream", "CG002", "cannot take 2 upstream gradient(s)"),
    ],
)
def test_defect_found_in_both_modes(main_run, function, code, expected_text):
    finding = main_run.one(function, code)
    assert expected_text in finding["message"]
    assert f"'{function}'" in finding["message"]
    assert finding["path"].endswith(DEFECTS)
    # the same defect is confirmed eagerly and when traced
    assert finding["mode"].split(", ")[:2] == ["eager", "tf.function"], finding


def test_shape_finding_names_the_input_used(main_run):
    finding = main_run.one("scalar_grad", "CG101")
    assert "inputs x: float32[3]" in finding["message"]


def test_nan_gradient_found_by_magnitude_probe(main_run):
    finding = main_run.one("naive_softplus", "CG105")
    assert "NaN/Inf" in finding["message"] and "filled with 100" in finding["message"]


@pytest.mark.parametrize("function, code, text", [
    ("python_if", "CG009", "Using a symbolic tf.Tensor as a Python bool"),
    ("numpy_in_grad", "CG010", "'SymbolicTensor' object has no attribute 'numpy'"),
])
def test_graph_only_failures_confirmed_under_tf_function(main_run, function, code, text):
    finding = main_run.one(function, code)
    assert text in finding["message"]
    assert "confirmed at runtime under tf.function" in finding["message"]
    assert finding["mode"] == "tf.function"  # eager works


def test_variables_listed_by_position_caught_by_eager_graph_comparison(main_run):
    finding = main_run.one("variables_by_position", "CG007")
    assert "differ between eager and tf.function" in finding["message"]
    assert "match them by identity" in finding["message"]


def test_missing_variables_argument(main_run):
    finding = main_run.one("missing_variables", "CG004")
    assert "does not accept `variables`" in finding["message"]


def test_definition_decorated_at_call_time_is_reported_on_its_def(main_run):
    finding = main_run.one("outer_scale.<locals>.inner", "CG101")
    from runtime_check.discover import static_definitions

    path = FIXTURES / DEFECTS
    defs = static_definitions(path.read_text(), str(path))
    (inner,) = [d for d in defs if d.qualname == "outer_scale.<locals>.inner"]
    assert inner.line == 120  # the nested def, not AutoGraph's generated copy
    assert (finding["line"], finding["column"]) == (inner.line, inner.column)
    assert "tf.function" in finding["mode"]


def test_library_custom_gradient_reached_through_recompute_grad(main_run):
    (finding,) = [f for f in main_run.findings if f["code"] == "CG008"]
    assert finding["function"].startswith("remat_with_keyword")
    assert "keyword argument(s) scale" in finding["message"]
    assert "recompute_grad" in finding["message"]


def test_each_defect_reported_once(main_run):
    seen = [(f["function"], f["code"]) for f in main_run.findings if f["path"].endswith(DEFECTS)]
    assert len(seen) == len(set(seen)), seen


def test_correct_functions_are_quiet(main_run):
    noisy = [f for f in main_run.findings if f["path"].endswith("correct.py")]
    assert noisy == []


def test_crash_and_hang_are_isolated(main_run):
    assert main_run.codes("aborts") == {"CG121"}
    assert "SIGABRT" in main_run.one("aborts", "CG121")["message"]
    assert main_run.codes("never_returns") == {"CG120"}
    assert "did not finish within 10 s" in main_run.one("never_returns", "CG120")["message"]
    # the functions around them still ran: one healthy, one with a defect found after the crash
    assert main_run.codes("healthy_before") == set()
    assert main_run.codes("healthy_after") == set()
    assert main_run.codes("shape_bug_after") == {"CG101"}


def test_module_that_fails_to_import_is_one_finding(main_run):
    (finding,) = [f for f in main_run.findings if f["path"].endswith("broken_import.py")]
    assert finding["code"] == "CG122"
    assert finding["line"] == 4  # the failing import statement
    assert "No module named 'module_that_does_not_exist_anywhere'" in finding["message"]
    assert "Traceback" not in finding["message"]


ABORTS_AT_IMPORT = """\
import os

import tensorflow as tf

os.abort()


@tf.custom_gradient
def never_reached(x):
    return x, lambda dy: dy
"""
ONE_GRADIENT_FOR_TWO = """\
import tensorflow as tf


@tf.custom_gradient
def scaled(x, w):
    return x * w, lambda dy: dy * w
"""


def test_module_that_crashes_while_importing_is_one_finding_and_the_next_module_is_checked(tmp_path: Path, cli):
    (tmp_path / "aborts_at_import.py").write_text(ABORTS_AT_IMPORT)
    (tmp_path / "later.py").write_text(ONE_GRADIENT_FOR_TWO)
    completed = cli("--format", "concise", ".", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == ("aborts_at_import.py:1:1: CG122 importing module 'aborts_at_import' crashed the process "
                        "(signal SIGABRT)")
    assert lines[1].startswith("later.py:5:5: CG003 'scaled': grad returns 1 gradient(s) for 2 input(s)")
    assert len(lines) == 2 and "Traceback" not in completed.stderr


def test_opt_in_checks(opt_in_run):
    results, _ = opt_in_run
    assert results.completed.returncode == 1, results.completed.stderr[-2000:]
    assert results.codes("ignores_upstream") >= {"CG108"}
    assert "zero upstream" in results.one("ignores_upstream", "CG108")["message"]
    assert results.codes("wrong_math") == {"CG107"}
    assert "numerical gradient" in results.one("wrong_math", "CG107")["message"]
    assert results.codes("exact_square") == set()


def test_numeric_check_on_a_gradient_of_the_wrong_shape(opt_in_run):
    """--numeric holds the wrongly shaped input still and checks the others: no internal error, the
    shape finding stays, and a correct gradient of the same kind gets nothing."""
    results, _ = opt_in_run
    assert "internal error" not in results.completed.stderr, results.completed.stderr[-2000:]
    finding = results.one("transposed_weight_grad", "CG101")
    assert "gradient for input 'w' has shape (4, 3) but the input has shape (3, 4)" in finding["message"]
    assert results.codes("transposed_weight_grad") == {"CG101"}
    assert results.codes("exact_matmul") == set()


INJECTED = """
import tensorflow as tf
from runtime_check import exercise

def _fails(self, accepted):
    raise RuntimeError("injected fault in the checker")

exercise.Exerciser.magnitude_probes = _fails  # the checker's own bug, after the main checks ran

@tf.custom_gradient
def summed(x):
    def grad(dy):
        return tf.reduce_sum(dy * 2.0 * x)
    return x * x, grad
"""


def test_an_internal_error_keeps_the_findings_and_is_never_ok(cli, tmp_path):
    (tmp_path / "injected.py").write_text(INJECTED)
    completed = cli("injected.py", cwd=tmp_path)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert "internal error in injected.py: RuntimeError: injected fault in the checker" in completed.stderr
    assert "CG101 'summed': gradient for input 'x' has shape () but the input has shape (3,)" in completed.stdout
    row = next(line for line in completed.stdout.splitlines() if line.startswith("injected.py:summed"))
    assert row.split()[1:3] == ["internal", "error"], row


def test_jit_compile_mode_is_named(opt_in_run):
    results, _ = opt_in_run
    finding = results.one("reduced_grad", "CG101")
    assert finding["mode"] == "eager, tf.function(jit_compile=True)"


def test_plots_written(opt_in_run):
    pytest.importorskip("matplotlib")
    _, plots = opt_in_run
    names = sorted(p.name for p in plots.glob("*.png"))
    assert "opt_in.exact_square.png" in names
    assert all((plots / n).stat().st_size > 1000 for n in names)
    assert (plots / "index.html").is_file() and (plots / "summary.md").is_file()
