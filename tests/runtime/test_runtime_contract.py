"""runtime-check finds custom gradients through cg-lint's model, with the project's own decorators
(real TensorFlow, a real child process)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

WRAPPER = """
import tensorflow as tf


def smooth_gradient(f):
    return tf.custom_gradient(f)
"""

MODULE = """
import tensorflow as tf
from mylib import smooth_gradient


def outer(x):
    @smooth_gradient
    def inner(v):
        def grad(dy):
            return tf.reduce_mean(dy) * tf.ones([1])  # shape (1,), the input is (3,)
        return 3.0 * v, grad
    return inner(x)
"""


@pytest.mark.parametrize("configured", [True, False])
def test_a_configured_decorator_applied_at_call_time_is_checked(tmp_path: Path, cli, configured: bool) -> None:
    (tmp_path / "mylib.py").write_text(textwrap.dedent(WRAPPER))
    (tmp_path / "ops.py").write_text(textwrap.dedent(MODULE))
    table = '[tool.cg_lint]\ndecorators = ["mylib.smooth_gradient"]\n' if configured else "[tool.cg_lint]\n"
    (tmp_path / "pyproject.toml").write_text(table)
    completed = cli("--format", "json", "--timeout", "60", "ops.py", cwd=tmp_path)
    findings = json.loads(completed.stdout)
    if configured:
        # the linter's model places it: the nested def, reached through outer
        shapes = [f for f in findings if f["code"] == "CG101"]
        assert [(f["function"], f["line"], f["column"]) for f in shapes] == [("outer.<locals>.inner", 8, 9)]
        assert completed.returncode == 1
    else:
        # without the setting nothing says `inner` is a custom gradient until outer runs, and nothing runs it
        assert findings == [] and completed.returncode == 0, completed.stderr[-2000:]
