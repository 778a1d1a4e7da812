"""The flake8 plugin, through real flake8 in a subprocess (as editors and CI run it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lint_helpers import ROOT
from test_cli import BAD, GOOD

pytest.importorskip("flake8")


def flake8(*args: str, cwd, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=env, timeout=300)


def test_plugin_is_registered(tmp_path):
    assert "cg-lint" in flake8("--version", cwd=tmp_path).stdout


def test_positions_match_the_cli(write, tmp_path):
    write("bad.py", BAD)
    proc = flake8("--select", "CG", "bad.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "bad.py:7:9: CG003 grad of 'weighted' returns 1 gradient but 'weighted' takes 2 inputs (x, w)"
    ]


def test_clean_file(write, tmp_path):
    write("good.py", GOOD)
    proc = flake8("--select", "CG", "good.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_noqa_on_the_reported_line(write, tmp_path):
    lines = BAD.splitlines()
    lines[6] += "  # noqa: CG003"
    write("n.py", "\n".join(lines) + "\n")
    assert flake8("--select", "CG", "n.py", cwd=tmp_path).stdout == ""
    assert "CG003" in flake8("--select", "CG", "--disable-noqa", "n.py", cwd=tmp_path).stdout


def test_jobs_2(write, tmp_path):
    for i in range(4):
        write(f"m{i}.py", BAD)
    write("clean.py", GOOD)
    proc = flake8("--select", "CG", "-j", "2", ".", cwd=tmp_path)
    assert sorted(proc.stdout.splitlines()) == [
        f"./m{i}.py:7:9: CG003 grad of 'weighted' returns 1 gradient but 'weighted' takes 2 inputs (x, w)"
        for i in range(4)
    ]


def test_stdin_like_an_editor(tmp_path):
    proc = flake8("--select", "CG", "--stdin-display-name", "pkg/layer.py", "-", cwd=tmp_path, stdin=BAD)
    assert proc.stdout.startswith("pkg/layer.py:7:9: CG003 ")


def test_unparsable_file_does_not_abort_the_run(write, tmp_path):
    write("a.py", "import tensorflow as tf\n@tf.custom_gradient\ndef f(x:\n")
    write("b.py", BAD)
    proc = flake8("--select", "CG,E999", "a.py", "b.py", cwd=tmp_path)
    assert "Traceback" not in proc.stderr and "PluginExecutionFailed" not in proc.stderr
    assert "a.py:3:" in proc.stdout and "E999" in proc.stdout
    assert "b.py:7:9: CG003" in proc.stdout


def test_configured_decorators_option(write, tmp_path):
    write("w.py", "from mylib import surrogate\n\n@surrogate\ndef f(x, y):\n    return x, lambda d: d\n")
    assert flake8("--select", "CG", "w.py", cwd=tmp_path).stdout == ""
    proc = flake8("--select", "CG", "--cg-decorators", "mylib.surrogate", "w.py", cwd=tmp_path)
    assert "w.py:5:25: CG003" in proc.stdout  # a lambda grad: its body
