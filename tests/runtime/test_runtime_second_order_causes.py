"""--second-order says each failure once, under the code of its cause, so an ignored cause stays
silent (real TensorFlow for the runs; ``describe`` needs none)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from runtime_check.classify import describe

NUMPY_IN_GRAD = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def scale(x):
        def grad(dy):
            return 2.0 * dy.numpy() * tf.ones_like(x)
        return 2.0 * x, grad


    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * tf.constant(3.0 * x.numpy() ** 2)
        return x * x * x, grad
''')
TWICE = re.compile(r"\b(\w+(?:Error|Exception)): \1: ")


def test_describe_names_the_type_once():
    rendered = AttributeError("in user code:\n\n    File \"m.py\", line 7, in grad  *\n        return dy.numpy()\n\n"
                              "    AttributeError: 'SymbolicTensor' object has no attribute 'numpy'\n")
    assert describe(rendered) == "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'"
    assert describe(ValueError("shapes differ")) == "ValueError: shapes differ"
    assert describe(TypeError("Error: not a type name here")) == "TypeError: Error: not a type name here"


@pytest.mark.tf
def test_a_cause_with_its_own_code_is_reported_and_ignored_under_it(tmp_path: Path, cli, make_env):
    pytest.importorskip("tensorflow")
    (tmp_path / "numpy_grad.py").write_text(NUMPY_IN_GRAD)
    env = make_env(CG_LINT_CACHE_DIR=str(tmp_path / "cache"))

    def run() -> list[dict]:
        completed = cli("--format", "json", "--second-order", "numpy_grad.py", cwd=tmp_path, env=env)
        assert completed.returncode in (0, 1), completed.stderr[-2000:]
        return json.loads(completed.stdout)

    reported = run()
    assert sorted((f["function"], f["code"], f["mode"]) for f in reported) == [
        ("cube", "CG010", "tf.function"), ("cube", "CG109", "eager"), ("scale", "CG010", "tf.function")]
    assert not any(TWICE.search(f["message"]) for f in reported), reported
    # `.numpy()` under tf.function is CG010's: ignoring it leaves only what is wrong eagerly (a
    # second tape sees x.numpy() as a constant), never a CG109 for the ignored failure
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\nignore = ["CG010"]\n')
    ignored = run()
    assert [(f["function"], f["code"], f["mode"]) for f in ignored] == [("cube", "CG109", "eager")]
    assert ".numpy()" in ignored[0]["message"]
