"""``bench/runtime_corpus.py`` on a corpus of its own: a relative ``--corpus`` that is a link, with
a project linked into it from elsewhere, still matches what runtime-check reports (real paths) to
the corpus's files. Before, such a corpus read as "not reachable" for every definition."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

MODULE = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def doubled(x):
        def grad(dy):
            return dy * 2.0
        return x * 2.0, grad


    @tf.custom_gradient
    def summed_grad(x):
        def grad(dy):
            return tf.reduce_sum(dy * 3.0)  # a scalar for a vector
        return x * 3.0, grad
''')


@pytest.mark.tf
def test_a_relative_linked_corpus_with_a_linked_project_is_measured(tmp_path: Path, make_env) -> None:
    project = tmp_path / "elsewhere" / "someone+project"
    project.mkdir(parents=True)
    (project / "ops.py").write_text(MODULE)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "someone+project").symlink_to(project, target_is_directory=True)
    (tmp_path / "linked").symlink_to(corpus, target_is_directory=True)
    completed = subprocess.run([sys.executable, str(ROOT / "bench" / "runtime_corpus.py"), "--corpus", "linked",
                                "--timeout", "60", "-j", "1", "-v"],
                               cwd=tmp_path, env=make_env(), capture_output=True, text=True, timeout=300)
    out = completed.stdout
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "| someone+project/ops.py | 2 | 2 | 1 |" in out, out
    assert "exercised: 2 of 2 (100%)" in out
    assert "- someone+project/ops.py:13 CG101 'summed_grad'" in out
    assert "not reachable" not in out


def test_a_corpus_that_is_not_there_is_one_line(tmp_path: Path, make_env, one_line_error) -> None:
    completed = subprocess.run([sys.executable, str(ROOT / "bench" / "runtime_corpus.py"), "--corpus", "nowhere"],
                               cwd=tmp_path, env=make_env(), capture_output=True, text=True, timeout=60)
    assert one_line_error(completed).startswith("runtime_corpus.py: error: nowhere is not a folder")
