"""The cg-lint-fix pre-commit hook, installed and run by real pre-commit from this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lint_helpers import ROOT, run_cli
from test_fix import BROKEN, FIXED

pytest.importorskip("pre_commit")


def git(*args: str, cwd) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository's git checkout")
def test_fix_hook_rewrites_the_file_and_the_result_lints_clean(tmp_path):
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "model.py").write_text(BROKEN)
    (repo / "notes.txt").write_text("return x, y, grad\n")
    git("add", ".", cwd=repo)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cg-lint-fix", "--all-files", "--verbose"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "files were modified by this hook" in out
    assert "Fixed 1 problem, 0 remaining" in out
    assert (repo / "model.py").read_text() == FIXED
    assert (repo / "notes.txt").read_text() == "return x, y, grad\n"
    lint = run_cli("model.py", "--select", "CG001", cwd=repo)
    assert lint.returncode == 0, lint.stdout
    # a second run has nothing left to fix: pre-commit passes
    again = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
