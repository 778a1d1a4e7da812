"""--second-order (grad is itself differentiable) and silencing runtime findings (real TensorFlow)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def second_order(cli):
    from conftest import Results

    return Results(cli("--format", "json", "--second-order", "second_order.py"))


def test_second_order_finds_grads_that_are_constants_to_a_second_tape(second_order):
    assert second_order.completed.returncode == 1, second_order.completed.stderr[-2000:]
    for function in ("softplus_stopped", "cube_numpy_grad"):
        finding = second_order.one(function, "CG109")
        assert "by central difference" in finding["message"] and "inputs x: float64" in finding["message"]
        assert finding["mode"] == "eager, tf.function"
    for function in ("softplus", "weighted_square", "straight_through"):
        assert second_order.codes(function) == set(), second_order.of(function)


def test_second_order_is_opt_in(cli):
    completed = cli("--format", "json", "second_order.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert json.loads(completed.stdout) == []


SILENCED = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def by_noqa(x):  # noqa: CG101
        return 2.0 * x, lambda dy: tf.reduce_sum(dy)


    @tf.custom_gradient
    def by_function_entry(x):
        return 2.0 * x, lambda dy: tf.reduce_sum(dy)


    @tf.custom_gradient
    def by_ignore(x):
        return 2.0 * x, lambda dy: tf.cast(dy, tf.float64)


    @tf.custom_gradient
    def other_code_on_noqa_line(x):  # noqa: CG102
        return 2.0 * x, lambda dy: tf.reduce_sum(dy)
''')

CONFIG = textwrap.dedent('''
    [tool.cg_lint]
    ignore = ["CG102"]

    [tool.cg_lint.runtime.functions."silenced:by_function_entry"]
    ignore = ["CG101"]
''')


def test_runtime_findings_are_silenced_like_linter_findings(tmp_path: Path, cli):
    (tmp_path / "silenced.py").write_text(SILENCED)
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    completed = cli("--format", "json", "silenced.py", cwd=tmp_path)
    findings = json.loads(completed.stdout)
    assert [(f["function"], f["code"]) for f in findings] == [("other_code_on_noqa_line", "CG101")]
    assert completed.returncode == 1
    # per-file-ignores too, and without configuration every one is reported
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\nper-file-ignores = { "silenced.py" = ["CG1"] }\n')
    assert json.loads(cli("--format", "json", "silenced.py", cwd=tmp_path).stdout) == []
    (tmp_path / "pyproject.toml").unlink()
    codes = {(f["function"], f["code"]) for f in json.loads(cli("--format", "json", "silenced.py",
                                                                 cwd=tmp_path).stdout)}
    assert codes == {("by_function_entry", "CG101"), ("by_ignore", "CG102"), ("other_code_on_noqa_line", "CG101")}


def test_per_function_ignore_must_be_codes(tmp_path: Path, cli):
    (tmp_path / "silenced.py").write_text(SILENCED)
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint.runtime.functions."silenced:by_noqa"]\nignore = "CG1"\n')
    completed = cli("silenced.py", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr.strip().endswith('ignore must be a list of codes or prefixes (e.g. ["CG104"])')
