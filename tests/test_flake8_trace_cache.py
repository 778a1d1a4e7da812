"""The flake8 plugin keeps the project's trace decision in the result cache (cg_lint/project/
snapshot.py): real flake8 processes, each fresh as an editor starts them, against the CLI without a
cache, while caller modules are edited, added and removed between runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cg_lint.project.snapshot import SETTLE_NS, snapshot
from test_trace_context import OPS

pytest.importorskip("flake8")

ROOT = Path(__file__).resolve().parent.parent
SETTLE = SETTLE_NS / 1e9 + 0.3

TRACED = """
    import tensorflow as tf
    from ops import clip


    @tf.function
    def step(x):
        return clip(x)
"""
EAGER = TRACED.replace("@tf.function", "# eager step")  # the same size
OTHER = """
    def helper(a):
        return a + 1
"""


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "proj"
        (self.root / ".git").mkdir(parents=True)
        (self.root / "pkg").mkdir()
        self.write("ops.py", OPS)
        for i in range(5):
            self.write(f"pkg/mod_{i}.py", OTHER)
        self.env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=str(tmp_path / "cache"),
                        CG_LINT_NO_HELPER="1")

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.write_text(textwrap.dedent(text))
        return path

    def flake8(self, *extra: str) -> tuple[list[tuple[int, int, str]], str]:
        """(what a fresh flake8 reports, its stderr: -X importtime when asked)."""
        run = subprocess.run([sys.executable, *extra, "-m", "flake8", "--isolated", "--select", "CG", "ops.py"],
                             cwd=self.root, capture_output=True, text=True, env=self.env, timeout=300)
        assert run.returncode in (0, 1), run.stderr
        shown = []
        for line in run.stdout.splitlines():
            _, row, column, text = line.split(":", 3)
            shown.append((int(row), int(column), text.strip()))
        return shown, run.stderr

    def cli(self) -> list[tuple[int, int, str]]:
        run = subprocess.run([sys.executable, "-m", "cg_lint", "--no-cache", "--format", "json", "ops.py"],
                             cwd=self.root, capture_output=True, text=True, env=self.env, timeout=300)
        assert run.returncode in (0, 1), run.stderr
        return [(f["line"], f["column"], f"{f['code']} {f['message']}") for f in json.loads(run.stdout)]

    def agree(self, traced: bool) -> str:
        """flake8 and the CLI report the same, traced or not; flake8's -X importtime."""
        shown, imports = self.flake8("-X", "importtime")
        assert shown == self.cli()
        assert [code.split()[0] for _, _, code in shown] == (["CG009"] if traced else [])
        return imports


def _searched(imports: str) -> bool:
    """Whether the run imported the project search (a decision made afresh, not read)."""
    return "cg_lint.project.trace" in imports


def test_a_kept_decision_is_read_and_changes_with_the_caller(tmp_path: Path) -> None:
    project = Project(tmp_path)
    caller = project.write("train.py", TRACED)
    time.sleep(SETTLE)
    assert _searched(project.agree(traced=True))  # decided, and kept: every module is settled
    imports = project.agree(traced=True)
    # read from the cache: no search, no libcst, no tomllib, not even the findings' dataclasses
    assert not _searched(imports)
    assert not any(m in imports for m in ("libcst", "tomllib", "cg_lint.findings"))
    # the caller stops tracing: a fresh module is decided afresh at once, and nothing is kept
    project.write("train.py", EAGER)
    assert _searched(project.agree(traced=False))
    assert _searched(project.agree(traced=False))
    time.sleep(SETTLE)
    project.agree(traced=False)
    assert not _searched(project.agree(traced=False))
    # the same size and mtime_ns after an edit: its ctime still says it changed
    st = caller.stat()
    project.write("train.py", TRACED)
    os.utime(caller, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert caller.stat().st_size == st.st_size and caller.stat().st_mtime_ns == st.st_mtime_ns
    assert _searched(project.agree(traced=True))


def test_a_caller_that_appears_or_disappears_changes_the_verdict(tmp_path: Path) -> None:
    project = Project(tmp_path)
    time.sleep(SETTLE)
    project.agree(traced=False)
    assert not _searched(project.agree(traced=False))
    # a new module in a searched folder (a package's, not the root's)
    added = project.write("pkg/train.py", TRACED)
    assert _searched(project.agree(traced=True))
    time.sleep(SETTLE)
    project.agree(traced=True)
    assert not _searched(project.agree(traced=True))
    added.unlink()  # the project is as it was at first: that decision may be read again
    project.agree(traced=False)
    # a whole package with a caller appears, its module written long ago (an old mtime)
    package = project.root / "late"
    package.mkdir()
    old = project.write("late/train.py", TRACED)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert _searched(project.agree(traced=True))


def test_the_file_s_own_edits_and_a_moved_root(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.write("train.py", TRACED)
    time.sleep(SETTLE)
    project.agree(traced=True)
    assert not _searched(project.agree(traced=True))
    # the linted file itself is keyed by its text: just written, its decision is still kept
    project.write("ops.py", textwrap.dedent(OPS) + "\nEXTRA = 1\n")
    project.agree(traced=True)
    assert not _searched(project.agree(traced=True))
    # a marker between the file and the root makes the file's folder its own project
    (project.root / "pkg" / "ops.py").write_text(textwrap.dedent(OPS))
    (project.root / "pkg" / ".git").mkdir()
    time.sleep(SETTLE)
    run = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", "pkg/ops.py"],
                         cwd=project.root, capture_output=True, text=True, env=project.env, timeout=300)
    assert run.stdout == ""  # nothing in pkg traces clip
    (project.root / "pkg" / ".git").rmdir()  # the root again: its train.py traces clip
    run = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", "pkg/ops.py"],
                         cwd=project.root, capture_output=True, text=True, env=project.env, timeout=300)
    assert "CG009" in run.stdout


def test_a_snapshot_settles_and_covers_what_the_search_reads(tmp_path: Path) -> None:
    project = Project(tmp_path)
    ops = project.root / "ops.py"
    taken = snapshot(str(ops))
    assert taken is not None and taken[1] is False  # every module was just written
    time.sleep(SETTLE)
    digest, settled = snapshot(str(ops)) or ("", False)
    assert settled and digest == taken[0]
    # the linted file's own text is not part of it (the result cache keys it)
    project.write("ops.py", textwrap.dedent(OPS) + "\nX = 1\n")
    assert snapshot(str(ops)) == (digest, True)
    # anything the search reads is: a module's text, a new module, a library marker
    for change in (lambda: project.write("pkg/mod_0.py", OTHER + "\n"),
                   lambda: project.write("pkg/new.py", OTHER),
                   lambda: project.write("pyproject.toml", "[project]\nname = 'p'\n"),
                   lambda: (project.root / "pkg" / "new.py").unlink()):
        before = snapshot(str(ops))
        change()
        after = snapshot(str(ops))
        assert before is not None and after is not None and before[0] != after[0]


HELPER = """
    import tensorflow as tf


    def safe_norm(t):
        n = tf.norm(t)
        if n > 0.0:
            return t / n
        return t
"""
LEAD_MODEL = """
    import tensorflow as tf

    from .ops import safe_norm


    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return safe_norm(dy)
        return tf.identity(x), grad


    @tf.function
    def step(x):
        return f(x)
"""


def test_findings_with_a_lead_are_answered_afresh(tmp_path: Path) -> None:
    """A lead asks about a helper in another module (cg_lint/answering.py): its file's decision is
    never kept, so every run answers it from the project as it is."""
    project = Project(tmp_path)
    project.write("pkg/__init__.py", "")
    helper = project.write("pkg/ops.py", HELPER)
    project.write("pkg/model.py", LEAD_MODEL)

    def both() -> tuple[list[str], list[str], str]:
        run = subprocess.run([sys.executable, "-X", "importtime", "-m", "flake8", "--isolated", "--select", "CG",
                              "pkg/model.py"], cwd=project.root, capture_output=True, text=True, env=project.env,
                             timeout=300)
        cli = subprocess.run([sys.executable, "-m", "cg_lint", "--no-cache", "--format", "json", "pkg/model.py"],
                             cwd=project.root, capture_output=True, text=True, env=project.env, timeout=300)
        shown = [line.split(": ", 1)[1].split()[0] + f":{line.split(':')[1]}" for line in run.stdout.splitlines()]
        return shown, [f"{f['code']}:{f['line']}" for f in json.loads(cli.stdout)], run.stderr

    time.sleep(SETTLE)
    for _ in range(2):  # the second run too answers the lead (nothing kept for it)
        shown, cli, imports = both()
        assert shown == cli == ["CG009:10"]
        assert "cg_lint.rules.lead_answers" in imports
    helper.write_text(textwrap.dedent(HELPER).replace("if n > 0.0:", "if n.shape.rank == 0:"))
    shown, cli, _ = both()
    assert shown == cli == []
