"""The pre-commit snippets of README.md and docs/, run as they stand, from a fresh clone.

CI's checkout is a fresh clone of main, possibly without tags: the snippet must work there, and
these tests fail (never skip) when it does not. The pinned snippet is run against a clone made
with ``--no-tags`` beside a scratch repository, as the README lays it out (``../cg-lint``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lint_helpers import ROOT
from test_cli import BAD, GOOD
from test_fix import BROKEN, FIXED

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
YAML = re.compile(r"^```yaml\n(repos:\n.*?)^```", re.S | re.M)


def snippets() -> list[tuple[str, str]]:
    return [(page.name, m.group(1)) for page in PAGES for m in YAML.finditer(page.read_text(encoding="utf-8"))]


def pinned() -> list[tuple[str, str]]:
    return [(page, text) for page, text in snippets() if "rev:" in text]


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone without tags, ``cg-lint`` beside where the scratch repositories go."""
    assert shutil.which("git"), "git is needed to check the pre-commit snippet"
    assert git("rev-parse", "--git-dir", cwd=ROOT).returncode == 0, "run from a git clone of cg-lint"
    pytest.importorskip("pre_commit")
    top = tmp_path_factory.mktemp("snippets")
    clone = git("clone", "--quiet", "--no-tags", str(ROOT), str(top / "cg-lint"), cwd=top)
    assert clone.returncode == 0, clone.stderr
    return top


def run_pre_commit(workspace: Path, name: str, config: str, files: dict[str, str],
                   env: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
    repo = workspace / name
    repo.mkdir()
    assert git("init", "--quiet", cwd=repo).returncode == 0
    for file, text in files.items():
        (repo / file).write_text(text)
    (repo / ".pre-commit-config.yaml").write_text(config)
    git("add", ".", cwd=repo)
    env = {**env, "PRE_COMMIT_HOME": str(workspace / "pre-commit-home"), "CG_LINT_CACHE_DIR": str(workspace / "cache"),
           "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=900)
    return proc, repo


def own_install_env() -> dict[str, str]:
    """The hook's own installation: nothing of this checkout on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_every_pinned_snippet_names_one_commit_every_clone_has():
    revs = {re.search(r"^\s*rev: (\S+)", text, re.M).group(1) for _, text in pinned()}  # type: ignore[union-attr]
    assert len(revs) == 1, revs
    rev = revs.pop()
    assert re.fullmatch(r"[0-9a-f]{40}", rev), f"rev {rev} is not a commit (a fresh clone may have no tags)"
    ancestor = git("merge-base", "--is-ancestor", rev, "HEAD", cwd=ROOT)
    assert ancestor.returncode == 0, f"{rev} is not in this clone's history: {ancestor.stderr}"
    assert all("repo: ../cg-lint" in text for _, text in pinned())


@pytest.mark.slow
def test_the_readme_snippet_runs_from_a_fresh_clone(workspace):
    (page, config), = [(p, t) for p, t in pinned() if p == "README.md"]
    proc, _ = run_pre_commit(workspace, "user-repo", config, {"bad.py": BAD, "good.py": GOOD},
                             own_install_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "bad.py:7:9: CG003" in out and "good.py:" not in out, out


@pytest.mark.slow
def test_the_fix_hook_snippet_runs_from_a_fresh_clone(workspace):
    (page, config), = [(p, t) for p, t in pinned() if p == "fixes.md"]
    proc, repo = run_pre_commit(workspace, "fix-repo", config, {"model.py": BROKEN}, own_install_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "files were modified by this hook" in out, out
    assert (repo / "model.py").read_text() == FIXED


def test_the_local_snippet_runs_the_installed_cg_lint(workspace):
    local = [t for _, t in snippets() if "repo: local" in t]
    assert len(local) == 1
    # the environment you commit from: its cg-lint (this checkout) first on PATH
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    proc, _ = run_pre_commit(workspace, "local-repo", local[0], {"bad.py": BAD, "good.py": GOOD}, env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "bad.py:7:9: CG003" in out, out
