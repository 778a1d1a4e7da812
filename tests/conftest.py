from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, cwd: Path | None = None, stdin: str | bytes | None = None,
            module: str = "cg_lint") -> subprocess.CompletedProcess:
    """Run a console entry point in a fresh interpreter, importing this checkout."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, input=data,
                          capture_output=True, env=env, timeout=300)


@pytest.fixture
def write(tmp_path: Path):
    """Write a dedented source file under tmp_path and return its path."""

    def _write(name: str, source: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            path.write_bytes(source)
        else:
            path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return _write
