"""The pre-commit hook, installed and run by real pre-commit from this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from lint_helpers import ROOT
from test_cli import BAD, GOOD

pytest.importorskip("pre_commit")


def git(*args: str, cwd) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository's git checkout")
def test_try_repo_flags_the_bad_file_and_skips_other_files(tmp_path):
    repo = tmp_path / "user-repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text(GOOD)
    (repo / "notes.txt").write_text("@tf.custom_gradient is not Python here\n")
    git("add", ".", cwd=repo)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cg-lint", "--all-files", "--verbose"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "bad.py:7:9: CG003" in out
    assert "good.py" not in out.split("bad.py:7:9")[1].split("\n")[0]
    assert "notes.txt" not in out
