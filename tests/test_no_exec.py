"""cg-lint reads code and never runs it: linting a file whose top level would act changes nothing.

The linted package writes a marker file, exits with 3, calls ``os._exit(4)`` and imports a sibling
module that writes another marker and raises, all at import time. Through the CLI and through
flake8 (in subprocesses, so an exit would show), the findings are still reported, the exit codes
are the linters' own, and no marker exists afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

HOSTILE = '''\
import os
import sys

import tensorflow as tf

import explode  # a sibling module that raises when imported

open({marker!r}, "w").write("the linter ran this file")
if __name__ != "__never__":
    sys.exit(3)
os._exit(4)


@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w  # one gradient for two inputs: CG003
    return x * w, grad
'''

EXPLODE = '''\
open({marker!r}, "w").write("the linter imported a module")
raise RuntimeError("imported")
'''


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, list[Path]]:
    package = tmp_path / "pkg"
    package.mkdir()
    markers = [tmp_path / "ran.txt", tmp_path / "imported.txt", tmp_path / "init.txt"]
    (package / "__init__.py").write_text(f"open({str(markers[2])!r}, 'w').write('x')\nraise SystemExit(5)\n")
    (package / "hostile.py").write_text(HOSTILE.format(marker=str(markers[0])))
    (package / "explode.py").write_text(EXPLODE.format(marker=str(markers[1])))
    return package, markers


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_cli_does_not_execute(hostile: tuple[Path, list[Path]]) -> None:
    package, markers = hostile
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", "--format", "concise", str(package)],
                          capture_output=True, text=True, env=_env(), cwd=package, timeout=120)
    assert proc.returncode == 1, proc.stderr  # findings, not 3/4/5
    assert "CG003" in proc.stdout and "hostile.py" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert not any(m.exists() for m in markers)


def test_cli_stdin_does_not_execute(hostile: tuple[Path, list[Path]]) -> None:
    package, markers = hostile
    source = (package / "hostile.py").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", "--stdin-filename", "hostile.py", "-"],
                          input=source, capture_output=True, env=_env(), cwd=package, timeout=120)
    assert proc.returncode == 1
    assert b"CG003" in proc.stdout
    assert not any(m.exists() for m in markers)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_flake8_does_not_execute(hostile: tuple[Path, list[Path]], jobs: str) -> None:
    package, markers = hostile
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", "-j", jobs, str(package)],
                          capture_output=True, text=True, env=_env(), cwd=package, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "CG003" in proc.stdout and "hostile.py" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert not any(m.exists() for m in markers)
