"""The pre-commit hooks, installed and run by real pre-commit from this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lint_helpers import ROOT, run_cli
from test_cli import BAD, GOOD
from test_fix import BROKEN, FIXED

pytest.importorskip("pre_commit")
pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository's git checkout"),
]


def user_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """A scratch git repository holding ``files``, all staged."""
    repo = tmp_path / "user-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, capture_output=True)
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, capture_output=True)
    return repo


def try_repo(repo: Path, hook: str) -> subprocess.CompletedProcess:
    """`pre-commit try-repo` of this checkout (uncommitted edits included) with one hook, all files."""
    env = dict(os.environ, PRE_COMMIT_HOME=str(repo.parent / "cache"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), hook, "--all-files", "--verbose"]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)


def test_lint_hook_flags_the_bad_file_and_skips_other_files(tmp_path):
    repo = user_repo(tmp_path, {"bad.py": BAD, "good.py": GOOD,
                                "notes.txt": "@tf.custom_gradient is not Python here\n"})
    proc = try_repo(repo, "cg-lint")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "bad.py:7:9: CG003" in out
    assert "good.py" not in out.split("bad.py:7:9")[1].split("\n")[0]
    assert "notes.txt" not in out


def test_fix_hook_rewrites_the_file_and_the_result_lints_clean(tmp_path):
    repo = user_repo(tmp_path, {"model.py": BROKEN, "notes.txt": "return x, y, grad\n"})
    proc = try_repo(repo, "cg-lint-fix")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "files were modified by this hook" in out
    assert "Fixed 1 problem, 0 remaining" in out
    assert (repo / "model.py").read_text() == FIXED
    assert (repo / "notes.txt").read_text() == "return x, y, grad\n"
    lint = run_cli("model.py", "--select", "CG001", cwd=repo)
    assert lint.returncode == 0, lint.stdout
    # a second run has nothing left to fix: pre-commit passes
    again = try_repo(repo, "cg-lint-fix")
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_fix_hook_output_shown_in_the_docs_is_real(tmp_path):
    """docs/fixes.md shows what pre-commit prints when cg-lint-fix changed files: two files with a
    CG001 each, examples/arity.py among them."""
    import re

    page = (ROOT / "docs" / "fixes.md").read_text(encoding="utf-8")
    shown = re.search(r"^```text\n(cg-lint --fix .*?)^```", page, re.S | re.M)
    assert shown is not None
    repo = user_repo(tmp_path, {"arity.py": (ROOT / "examples" / "arity.py").read_text(), "model.py": BROKEN})
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), NO_COLOR="1")
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cg-lint-fix", "--all-files"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    printed = [line.rstrip() for line in (proc.stdout + proc.stderr).splitlines()]
    expected = [line.rstrip() for line in shown.group(1).splitlines()]
    starts = [i for i, line in enumerate(printed) if line == expected[0]]
    assert starts and printed[starts[0]:starts[0] + len(expected)] == expected, "\n".join(printed)
