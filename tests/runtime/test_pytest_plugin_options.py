"""The pytest plugin's options, summary, errors and pytest-xdist, each in a real pytest run."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SUITE = FIXTURES / "plugin_suite"
FINDINGS = ("CG101 'summed_grad'", "CG009 'branchy'", "CG008 'scale'")

def _plugin_args() -> list[str]:
    registered = any(
        e.name == "cg_runtime_check" for e in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if registered else ["-p", "runtime_check.pytest_plugin"]


def _pytest(*args: str, cwd: Path = SUITE, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *_plugin_args(), "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _section(out: str) -> str:
    assert "custom-gradient runtime check" in out, out[-3000:]
    return out[out.index("custom-gradient runtime check") :]


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "suite"
    shutil.copytree(SUITE, copy)
    return copy


@pytest.mark.tf
def test_flag_before_the_paths_and_verbose_names(make_env):
    completed = _pytest("--cg-runtime-check", "-v", ".", env=make_env())
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-2000:]
    section = _section(completed.stdout)
    for finding in FINDINGS:
        assert finding in section
    checked = sorted(
        ln.split()[-1] for ln in section.splitlines() if ln.startswith("checked cg_ops.py:")
    )
    assert checked == ["branchy", "scale", "scaled_identity", "summed_grad"]
    assert (
        "4 custom gradient(s) checked through real calls; 3 finding(s), failing the run" in section
    )
    # the summary shown in docs/runtime-check.md is this run's, line for line
    shown = [ln for ln in section.splitlines()[1:] if ln.strip() and not ln.startswith("=")]
    assert _documented_summary() == shown


def _documented_summary() -> list[str]:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "runtime-check.md").read_text()
    block = docs[docs.index("<!-- plugin-summary:") :].split("```")[1]
    return [ln.strip() for ln in block.splitlines() if ln.strip()]


@pytest.mark.tf
def test_mode_from_the_ini_file(suite_copy: Path, make_env):
    (suite_copy / "pytest.ini").write_text(
        "[pytest]\npython_files = check_*.py\n"
        "cg_runtime_check = true\ncg_runtime_check_mode = warn\n"
    )
    completed = _pytest("-q", env=make_env(), cwd=suite_copy)
    assert completed.returncode == 0, completed.stdout[-3000:]
    section = _section(completed.stdout)
    assert "3 finding(s), reported only (--cg-runtime-check-mode=warn)" in section


def test_bad_mode_is_one_usage_line(suite_copy: Path, make_env):
    (suite_copy / "pytest.ini").write_text(
        "[pytest]\npython_files = check_*.py\ncg_runtime_check_mode = loud\n"
    )
    completed = _pytest("--cg-runtime-check", "-q", env=make_env(), cwd=suite_copy)
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert "ERROR: cg_runtime_check_mode must be one of fail, warn, not 'loud'" in completed.stderr
    assert "Traceback" not in completed.stderr + completed.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_without_tensorflow_one_usage_line(workers: list[str], tmp_path: Path, make_env,
                                           no_tensorflow: Path):
    blocker = no_tensorflow
    (tmp_path / "test_plain.py").write_text("def test_ok():\n    assert True\n")
    env = make_env()
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    # the blocker really works: this interpreter cannot import TensorFlow
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorflow"], env=env, capture_output=True, text=True
    )
    assert "ModuleNotFoundError: No module named 'tensorflow'" in probe.stderr
    completed = _pytest("--cg-runtime-check", *workers, "test_plain.py", cwd=tmp_path, env=env)
    assert completed.returncode == 4, completed.stdout + completed.stderr
    errors = [ln for ln in completed.stderr.splitlines() if ln.strip()]
    assert errors == [
        "ERROR: --cg-runtime-check needs TensorFlow (the 'runtime' extra; pip install tensorflow): "
        "No module named 'tensorflow'"
    ], completed.stderr
    assert "INTERNALERROR" not in completed.stdout + completed.stderr


@pytest.mark.tf
def test_collection_error_is_never_no_findings(suite_copy: Path, make_env):
    (suite_copy / "check_broken.py").write_text("import cg_ops\n\ndef test_x(:\n    pass\n")
    (suite_copy / "cg_ops.py").write_text(
        "import tensorflow as tf\n\n\n@tf.custom_gradient\ndef fine(x):\n"
        "    def grad(dy):\n        return dy\n    return tf.identity(x), grad\n"
    )
    (suite_copy / "check_ops.py").write_text(
        "import tensorflow as tf\n\nimport cg_ops\n\n\ndef test_fine():\n"
        "    x = tf.constant([1.0])\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
        "        y = cg_ops.fine(x)\n    assert tape.gradient(y, x).numpy().tolist() == [1.0]\n"
    )
    completed = _pytest(
        "--cg-runtime-check",
        "--continue-on-collection-errors",
        "-q",
        env=make_env(),
        cwd=suite_copy,
    )
    assert completed.returncode != 0
    section = _section(completed.stdout)
    assert "no findings" not in section
    assert (
        "1 custom gradient(s) checked through real calls; "
        "incomplete: 1 collection error(s), so the tests "
        "that were not collected were not checked; 0 finding(s)"
    ) in section


@pytest.mark.tf
@pytest.mark.slow
def test_xdist_workers_report_to_the_controller(make_env):
    completed = _pytest("--cg-runtime-check", "-n", "2", "-v", ".", env=make_env())
    assert "created: 2/2 workers" in completed.stdout, completed.stdout[-3000:]
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-2000:]
    section = _section(completed.stdout)
    for finding in FINDINGS:
        assert sum(finding in ln for ln in section.splitlines()) == 1, (
            section
        )  # once, whichever worker saw it
    assert (
        "4 custom gradient(s) checked through real calls; 3 finding(s), failing the run" in section
    )


@pytest.mark.tf
@pytest.mark.slow
def test_xdist_clean_suite_passes(suite_copy: Path, make_env):
    (suite_copy / "check_ops.py").write_text(
        "import tensorflow as tf\n\nimport cg_ops\n\n\ndef test_scaled():\n"
        "    x = tf.constant([1.0, 2.0])\n"
        "    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
        "        y = cg_ops.scaled_identity(x)\n"
        "    assert tape.gradient(y, x).numpy().tolist() == [3.0, 3.0]\n"
    )
    completed = _pytest("--cg-runtime-check", "-n", "2", ".", env=make_env(), cwd=suite_copy)
    assert completed.returncode == 0, completed.stdout[-3000:]
    assert "1 custom gradient(s) checked through real calls; no findings" in _section(
        completed.stdout
    )


SHARED_WRAPPER_OPS = textwrap.dedent('''
    """Two functions made by one decorator factory: they share the wrapper's code."""

    import tensorflow as tf


    def with_derivative(fn, derivative):
        @tf.custom_gradient
        def elementwise(x):
            def grad(dy):
                return dy * derivative(x)
            return fn(x), grad
        return elementwise


    def _square(x):
        return x * x


    def _twice(x):
        return 2.0 * x


    def _step(x):
        return tf.where(x > 0, x, 0.0 * x)


    def _step_slope(x):
        if x > 0:  # a Python branch on a tensor: fine eagerly, fails under tf.function
            return 1.0
        return 0.0


    square = with_derivative(_square, _twice)
    step = with_derivative(_step, _step_slope)
''')

SHARED_WRAPPER_CHECKS = textwrap.dedent('''
    import tensorflow as tf

    import shared_ops


    def gradient(fn, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)


    def test_square():  # runs first: the shared wrapper is seen with this input signature
        assert float(gradient(shared_ops.square, tf.constant(3.0))) == 6.0


    def test_step():  # same wrapper, same signature, another definition
        assert float(gradient(shared_ops.step, tf.constant(2.0))) == 1.0
''')


@pytest.mark.tf
def test_functions_sharing_one_wrapper_are_each_rerun(tmp_path: Path, make_env):
    (tmp_path / "shared_ops.py").write_text(SHARED_WRAPPER_OPS)
    (tmp_path / "check_shared.py").write_text(SHARED_WRAPPER_CHECKS)
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    completed = _pytest("--cg-runtime-check", "-v", ".", env=make_env(), cwd=tmp_path)
    assert completed.returncode == 1, completed.stdout[-3000:] + completed.stderr[-2000:]
    assert "2 passed" in completed.stdout  # the user's tests pass: only the re-run finds it
    section = _section(completed.stdout)
    findings = [ln for ln in section.splitlines() if " CG" in ln and "shared_ops.py" in ln]
    # the traced re-run of `step` fails on its Python branch: reported on the shared wrapper
    assert any("CG009" in ln and "elementwise" in ln for ln in findings), section
    assert "1 finding(s), failing the run" in section, section
