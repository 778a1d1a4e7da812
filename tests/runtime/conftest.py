"""Helpers for runtime-check tests: run the CLI in a subprocess, once per session where possible."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import textwrap

import pytest

# The fixtures are inputs for runtime-check (deliberate defects, a suite run in a subprocess).
collect_ignore = ["fixtures"]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.update(extra)
    return env


def run_cli(*args: str, cwd: Path = FIXTURES, timeout: float = 300, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runtime_check", *args], cwd=cwd, env=env or child_env(),
                          capture_output=True, text=True, timeout=timeout)


class Results:
    """Parsed ``--format json`` output, with lookups by function and code."""

    def __init__(self, completed: subprocess.CompletedProcess[str]) -> None:
        self.completed = completed
        try:
            self.findings = json.loads(completed.stdout)
        except json.JSONDecodeError as exc:  # show what went wrong instead of a bare decode error
            raise AssertionError(f"not JSON: {completed.stdout[-2000:]}\nstderr: {completed.stderr[-2000:]}") from exc

    def of(self, function: str, path_end: str | None = None) -> list[dict]:
        return [f for f in self.findings if f["function"] == function
                and (path_end is None or f["path"].endswith(path_end))]

    def codes(self, function: str, path_end: str | None = None) -> set[str]:
        return {f["code"] for f in self.of(function, path_end)}

    def one(self, function: str, code: str) -> dict:
        matches = [f for f in self.of(function) if f["code"] == code]
        assert len(matches) == 1, (function, code, self.of(function))
        return matches[0]


@pytest.fixture(scope="session")
def main_run() -> Results:
    """One CLI run over the defect, correct, crashing and unimportable fixture modules."""
    completed = run_cli("--format", "json", "--timeout", "10",
                        "defects.py", "correct.py", "crashy.py", "broken_import.py")
    return Results(completed)


@pytest.fixture(scope="session")
def opt_in_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Results, Path]:
    """The opt-in checks, jit_compile tracing and --plot, in one run."""
    plots = tmp_path_factory.mktemp("plots")
    plot = ["--plot", str(plots)] if importlib.util.find_spec("matplotlib") else []
    completed = run_cli("--format", "json", "--numeric", "--zero-upstream", "--jit", *plot, "opt_in.py")
    return Results(completed), plots


@pytest.fixture(scope="session")
def cli():
    """``cli(*args, cwd=..., env=...)`` runs ``python -m runtime_check`` in a subprocess."""
    return run_cli


@pytest.fixture(scope="session")
def make_env():
    return child_env


# Makes `import tensorflow` fail as it does where TensorFlow is not installed.
_NO_TENSORFLOW = textwrap.dedent("""
    import sys

    class _NoTensorFlow:
        def find_spec(self, name, path=None, target=None):
            if name == "tensorflow" or name.startswith("tensorflow."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NoTensorFlow())
""")


@pytest.fixture
def no_tensorflow(tmp_path: Path) -> Path:
    """A folder whose sitecustomize blocks TensorFlow: put it first on a child's PYTHONPATH."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(_NO_TENSORFLOW)
    return blocker


def _one_line_error(completed: subprocess.CompletedProcess[str]) -> str:
    assert completed.returncode == 2, (completed.stdout, completed.stderr)
    lines = [ln for ln in completed.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    return lines[0]


@pytest.fixture(scope="session")
def one_line_error():
    """``one_line_error(completed)``: asserts exit 2 and one line on stderr, no traceback; returns it."""
    return _one_line_error
