"""Helpers shared by the linter tests (a plain module: conftest names collide across folders)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None, stdin: str | bytes | None = None,
            module: str = "cg_lint") -> subprocess.CompletedProcess:
    """Run a console entry point in a fresh interpreter, importing this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, input=data,
                          capture_output=True, env=env, timeout=300)


def tf_driver_outcomes(script: str, timeout: float) -> dict:
    """Run one of the TensorFlow drivers in tests/ (TF stays out of this process); its JSON result."""
    import json

    import pytest

    pytest.importorskip("tensorflow")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / script)], capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)
