"""Declared input specs, the pytest plugin on a small suite, and --only-flagged (real TensorFlow)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

FIXTURES = Path(__file__).resolve().parent / "fixtures"

SHAPES = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def repeat_sum(x, n):
        y = x
        for _ in range(n):  # n is a Python int eagerly, a tensor under tf.function
            y = y + x
        def grad(dy):
            return dy * (n + 1), None
        return y, grad


    @tf.custom_gradient
    def flatten_4x5(x):
        def grad(dy):
            return tf.reshape(dy, [4, 5])
        return tf.reshape(x, [20]), grad
''')

PYPROJECT = textwrap.dedent('''
    [tool.cg_lint.runtime]
    timeout = 30

    [tool.cg_lint.runtime.functions."shapes:repeat_sum"]
    inputs = [{shape = [3], dtype = "float32"}, {value = 2}]

    [tool.cg_lint.runtime.functions."shapes:flatten_4x5"]
    inputs = [{shape = [4, 5]}]
''')

UNPROBEABLE = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def needs_17_rows(x):
        tf.debugging.assert_equal(tf.shape(x)[0], 17, message="seventeen rows")
        def grad(dy):
            return dy
        return 2.0 * x, grad
''')


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "shapes.py").write_text(SHAPES)
    (root / "unprobeable.py").write_text(UNPROBEABLE)
    return root


def test_declared_inputs_are_used(project: Path, cli):
    completed = cli("shapes.py", cwd=project)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    (cg012,) = [ln for ln in lines if " CG012 " in ln]
    assert cg012.startswith(f"shapes.py:{_where(project / 'shapes.py', 'repeat_sum')}: CG012 'repeat_sum': ")
    assert "cannot be interpreted as an integer" in cg012
    assert "confirmed at runtime under tf.function" in cg012
    assert "inputs x: float32[3], n: 2" in cg012
    (row,) = [ln for ln in lines if ln.startswith("shapes.py:flatten_4x5")]
    assert row.split()[1] == "ok" and "x: float32[4,5]" in row
    assert not any(" CG130 " in ln for ln in lines)


def test_no_valid_inputs_is_info_not_failure(project: Path, cli):
    completed = cli("--format", "json", "unprobeable.py", cwd=project)
    assert completed.returncode == 0, completed.stderr
    (finding,) = json.loads(completed.stdout)
    assert finding["code"] == "CG130" and finding["function"] == "needs_17_rows"
    assert "no valid inputs found" in finding["message"]
    # why, in one line of our own words: not TensorFlow's message
    assert "the forward raised InvalidArgumentError" in finding["message"]
    assert "seventeen" not in finding["message"] and "\n" not in finding["message"]


def _where(path: Path, qualname: str) -> str:
    """line:column of a definition as the linter's model (or the fallback scan) places it."""
    from runtime_check.discover import static_definitions

    (found,) = [d for d in static_definitions(path.read_text(), str(path)) if d.qualname == qualname]
    return f"{found.line}:{found.column}"


def _plugin_args() -> list[str]:
    registered = any(e.name == "cg_runtime_check" for e in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", "runtime_check.pytest_plugin"]


def _run_suite(option: str, make_env, *more: str) -> subprocess.CompletedProcess[str]:
    suite = FIXTURES / "plugin_suite"
    return subprocess.run([sys.executable, "-m", "pytest", *_plugin_args(), "-q", "-p", "no:cacheprovider", option, *more],
                          cwd=suite, env=make_env(), capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def suite_fail(make_env):
    return _run_suite("--cg-runtime-check", make_env)


def test_plugin_reports_in_terminal_summary_and_fails(suite_fail):
    out = suite_fail.stdout
    assert "4 passed" in out  # the user's tests themselves pass
    assert suite_fail.returncode == 1, out[-3000:]
    section = out[out.index("custom-gradient runtime check"):]
    ops = FIXTURES / "plugin_suite" / "cg_ops.py"
    assert (f"cg_ops.py:{_where(ops, 'summed_grad')}: CG101 'summed_grad': gradient for input 'x' has shape () "
            "but the input has shape (3,)") in section
    # fails only when traced: found by re-running the real eager call under tf.function
    assert f"cg_ops.py:{_where(ops, 'branchy')}: CG009 'branchy'" in section
    assert "confirmed at runtime under tf.function" in section
    assert f"cg_ops.py:{_where(ops, 'scale')}: CG008 'scale': called with keyword argument(s) factor" in section
    assert "scaled_identity" not in section
    assert "3 finding(s), failing the run" in section


def test_plugin_warn_mode_only_reports(make_env):
    completed = _run_suite("--cg-runtime-check", make_env, "--cg-runtime-check-mode=warn")
    assert completed.returncode == 0, completed.stdout[-3000:]
    assert "CG101 'summed_grad'" in completed.stdout
    assert "reported only" in completed.stdout


def test_plugin_inactive_without_option(make_env):
    completed = _run_suite("-q", make_env)
    assert completed.returncode == 0
    assert "custom-gradient runtime check" not in completed.stdout


def _linter_api():
    try:
        from cg_lint import api
    except ImportError:
        return None
    return api if hasattr(api, "lint_source") and hasattr(api, "find_custom_gradients") else None


@pytest.mark.skipif(_linter_api() is None, reason="cg_lint.api (lint_source) is not available in this checkout yet")
def test_only_flagged_checks_only_what_the_linter_flags(cli):
    api = _linter_api()
    source = (FIXTURES / "defects.py").read_text()
    static, error = api.lint_source(source, str(FIXTURES / "defects.py"))
    assert error is None
    flagged = {f.function for f in static if f.function}
    completed = cli("--only-flagged", "--format", "json", "defects.py")
    assert completed.returncode in (0, 1), completed.stderr
    functions = {f["function"] for f in json.loads(completed.stdout)}
    tops = {q.split(".<locals>")[0] for q in flagged}
    assert functions, "the linter flags defects in this module, so some are confirmed"
    for function in functions:
        assert function in flagged or function.split(".<locals>")[0] in tops, function
    # a NaN at x=100 is invisible to a linter: unless flagged, that function is not run
    if "naive_softplus" not in flagged:
        assert "naive_softplus" not in functions
