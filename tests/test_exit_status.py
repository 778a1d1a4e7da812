"""Output lost to a closed pipe is never reported as success, and never as a traceback.

The fault is real: the commands write into a pipe whose read end is already closed (every write
fails with EPIPE), or into ``head -1`` under ``set -o pipefail`` with more output than a pipe holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_faults_lint import source

ROOT = Path(__file__).resolve().parent.parent
BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a writer killed by it


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1",
            "CG_LINT_CACHE_DIR": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}


def into_closed_pipe(tmp_path: Path, module: str, *args: str, stdin: bytes = b"") -> tuple[int, str]:
    """Run ``python -m module args`` with stdout a pipe nobody reads: (status, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", module, *args], stdout=write_end, stderr=subprocess.PIPE,
                              input=stdin, cwd=tmp_path, env=_env(tmp_path), timeout=300)
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr.decode()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(source(3))
    return tmp_path


@pytest.mark.parametrize("args", [
    ("rule", "--all"),
    ("rule", "CG003"),
    ("--version",),
    ("--help",),
    ("--exit-zero", "--isolated", "src"),
    ("--isolated", "--format", "json", "src"),
    ("--isolated", "--diff", "src"),
])
def test_cg_lint_into_a_closed_pipe_fails_quietly(project: Path, args: tuple[str, ...]) -> None:
    status, stderr = into_closed_pipe(project, "cg_lint", *args)
    assert status == BROKEN_PIPE
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert "Found" not in stderr  # nothing after the loss pretends the run went on


def test_fix_on_stdin_into_a_closed_pipe_is_not_success(project: Path) -> None:
    # an editor that replaces its buffer with this output would get nothing: never exit 0
    status, stderr = into_closed_pipe(project, "cg_lint", "--fix", "--isolated", "-", stdin=source(2).encode())
    assert status == BROKEN_PIPE and "Traceback" not in stderr, stderr


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("src",)])
def test_runtime_check_into_a_closed_pipe_fails_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "plain.py").write_text("x = 1\n")  # no custom gradient: prints one line
    status, stderr = into_closed_pipe(tmp_path, "runtime_check", *args)
    assert status == BROKEN_PIPE
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None, reason="needs bash and head")
def test_head_under_pipefail_sees_the_loss(tmp_path: Path) -> None:
    """More output than a pipe holds: ``head -1`` leaves while cg-lint still writes."""
    (tmp_path / "many.py").write_text(source(600))  # ~130 KB of findings, twice a pipe's 64 KB
    script = f"set -o pipefail; {sys.executable} -m cg_lint --isolated --exit-zero many.py | head -1"
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == BROKEN_PIPE, proc.stderr
    assert proc.stdout.startswith("many.py:") and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr
    # the same run read to the end is a success
    whole = subprocess.run(["bash", "-c", script.replace("| head -1", "| cat >/dev/null")], cwd=tmp_path,
                           env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0, whole.stderr
