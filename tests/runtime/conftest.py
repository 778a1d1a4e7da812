"""Helpers for runtime-check tests: run the CLI in a subprocess, once per session where possible."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

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
