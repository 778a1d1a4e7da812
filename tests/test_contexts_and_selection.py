"""Where graph mode cannot happen the graph-mode rules are silent; CG018 is opinionated.

The TensorFlow evidence for each context is in the rule examples run by tests/test_examples_tf.py;
these tests pin the linter's side: which findings each context removes, which it keeps, what the
messages say about tf.function calls, how CG018 is selected (cg-lint, its configuration and
flake8), and that the prefilter's reduction keeps what the new analyses read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from cg_lint.config import Settings
from cg_lint.engine import lint_source
from lint_helpers import ROOT, run_cli

ALL = Settings(select=("ALL",))

GRAPH_MODE_BODY = """
import tensorflow as tf
{prelude}

@tf.custom_gradient
def {name}(x, n):
    if tf.reduce_sum(x) > 0:
        x = x * 2.0
    total = float(tf.reduce_sum(x))
    for _ in range(n):
        x = x * 1.0
    def grad(dy):
        return dy * w, None
    return x, grad
{callers}
"""
GRAPH_CODES = {"CG009", "CG010", "CG012", "CG018"}


def codes(source: str, settings: Settings = ALL) -> list[str]:
    result = lint_source(textwrap.dedent(source), "module.py", settings)
    assert result.error is None, result.error
    return sorted(f.code for f in result.findings)


def body(prelude: str = "", callers: str = "", name: str = "op") -> str:
    return GRAPH_MODE_BODY.format(prelude="w = tf.Variable(2.0)\n" + prelude, callers=callers, name=name)


def test_the_body_is_reported_where_graph_mode_can_happen():
    assert set(codes(body())) == GRAPH_CODES


@pytest.mark.parametrize("prelude,callers,name", [
    ("tf.config.run_functions_eagerly(True)", "", "op"),
    ("if True:\n    tf.config.experimental_run_functions_eagerly(True)", "", "op"),
    ("", "def apply(x):\n    return tf.py_function(_op, [x, 3], tf.float32)\n", "_op"),
    ("", "def apply(x):\n    return tf.numpy_function(func=_op, inp=[x, 3], Tout=tf.float32)\n", "_op"),
    ("", "def apply(x):\n    if tf.executing_eagerly():\n        return _op(x, 3)\n    return x\n", "_op"),
], ids=["run_functions_eagerly", "experimental-switch", "py_function", "numpy_function", "guarded-calls"])
def test_eager_only_contexts_silence_the_graph_mode_rules(prelude, callers, name):
    assert GRAPH_CODES.isdisjoint(codes(body(prelude, callers, name)))


def test_a_public_function_behind_py_function_may_be_called_elsewhere():
    # another module could import `op` and call it under tf.function
    source = body("", "def apply(x):\n    return tf.py_function(op, [x, 3], tf.float32)\n")
    assert set(codes(source)) == GRAPH_CODES


def test_run_functions_eagerly_inside_a_function_does_not_count():
    source = body("def debug():\n    tf.config.run_functions_eagerly(True)\n")
    assert set(codes(source)) == GRAPH_CODES


def test_a_body_asserting_eager_execution_is_silent_the_others_not():
    source = """
import tensorflow as tf

@tf.custom_gradient
def op(x):
    assert tf.executing_eagerly()
    if tf.reduce_sum(x) > 0:
        x = x * 2.0
    def grad(dy):
        if tf.reduce_sum(dy) > 0:  # the forward ran eagerly: so does grad
            dy = -dy
        return dy
    return x, grad

@tf.custom_gradient
def op2(x):
    if tf.reduce_sum(x) > 0:  # the forward can be traced
        x = x * 2.0
    def grad(dy):
        if not tf.executing_eagerly():
            raise RuntimeError("eager only")
        if tf.reduce_sum(dy) > 0:
            dy = -dy
        return dy
    return x, grad
"""
    result = lint_source(textwrap.dedent(source), "module.py", ALL)
    assert [(f.line, f.code) for f in result.findings] == [(17, "CG009")]


def test_eager_only_code_keeps_cg011_and_tensor_keywords():
    source = """
import tensorflow as tf

tf.config.run_functions_eagerly(True)

@tf.custom_gradient
def op(x, scale=1.0):
    head = x[:, 0]
    y = tf.cond(head > 0, lambda: x, lambda: -x)  # fails eagerly too
    return y * scale, lambda dy: dy * scale

a = op(tf.ones([2, 2]), scale=2.0)  # a Python keyword: only configuration eagerly
b = op(tf.ones([2, 2]), scale=tf.constant(2.0))  # a tensor keyword gets no gradient eagerly
"""
    result = lint_source(textwrap.dedent(source), "module.py", ALL)
    assert [(f.line, f.code) for f in result.findings] == [(9, "CG011"), (13, "CG008")]


def test_messages_name_a_tf_function_call_in_the_file():
    source = """
import tensorflow as tf

@tf.custom_gradient
def op(x):
    if tf.reduce_sum(x) > 0:
        x = x * 2.0
    return x, lambda dy: dy

@tf.function
def step(x):
    return op(x)
"""
    (finding,) = lint_source(textwrap.dedent(source), "module.py", ALL).findings
    assert "under tf.function (it is called under tf.function at line 12) this raises" in finding.message


# -- CG018 is opinionated ---------------------------------------------------------------------------
OPINION = """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def scaled(x):
    def grad(dy, variables=None):
        return dy * w, [tf.reduce_sum(dy * x) for _ in variables]
    return x * w, grad
"""
CERTAIN = OPINION + """
@tf.function
def step(x, flag):
    return tf.cond(flag, lambda: scaled(x), lambda: x)
"""


@pytest.mark.parametrize("settings,expected", [
    (Settings(), []),
    (Settings(select=("CG01",)), []),
    (Settings(extend_select=("CG018",)), ["CG018"]),
    (Settings(select=("CG018",)), ["CG018"]),
    (Settings(select=("ALL",)), ["CG018"]),
    (Settings(extend_select=("CG018",), ignore=("CG018",)), []),
], ids=["default", "prefix", "extend-select", "select", "ALL", "ignored"])
def test_cg018_opinion_needs_its_own_code(settings, expected):
    assert codes(OPINION, settings) == expected


def test_cg018_reports_the_tf_cond_case_by_default():
    result = lint_source(textwrap.dedent(CERTAIN), "module.py", Settings())
    (finding,) = result.findings
    assert finding.code == "CG018" and "is called inside tf.cond/tf.switch_case/tf.while_loop" in finding.message
    assert "(line 14)" in finding.message


def test_cg018_tf_cond_outside_tf_function_is_an_opinion():
    source = OPINION + "\ndef step(x, flag):\n    return tf.cond(flag, lambda: scaled(x), lambda: x)\n"
    assert codes(source, Settings()) == []


def test_cg018_advice_fits_a_keras_layer():
    source = """
import keras
import tensorflow as tf

class Block(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(4)

    def call(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy, variables=None):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = self.dense(x)
                return tape.gradient(y, x, output_gradients=dy), [None for _ in variables]
            return self.dense(x), grad
        return f(x)
"""
    (finding,) = [f for f in lint_source(textwrap.dedent(source), "m.py", ALL).findings if f.code == "CG018"]
    assert "calls the Keras layer self.dense" in finding.message
    assert "convert_to_tensor" not in finding.message


def test_cli_extend_select_and_config(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent(OPINION))
    assert run_cli("m.py", cwd=tmp_path).returncode == 0
    proc = run_cli("--extend-select", "CG018", "--format", "concise", "m.py", cwd=tmp_path)
    assert proc.returncode == 1 and b"CG018" in proc.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\nextend-select = ["CG018"]\n')
    assert b"CG018" in run_cli("--format", "concise", "m.py", cwd=tmp_path).stdout


def flake8(*args: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, capture_output=True,
                          text=True, env=env, timeout=300)


def test_flake8_selects_the_opinion_by_its_code(tmp_path):
    pytest.importorskip("flake8")
    (tmp_path / "m.py").write_text(textwrap.dedent(OPINION))
    assert "CG018" not in flake8("--select", "CG", "m.py", cwd=tmp_path).stdout
    assert "CG018" in flake8("--select", "CG", "--extend-select", "CG018", "m.py", cwd=tmp_path).stdout
    assert "CG018" in flake8("--select", "CG018", "m.py", cwd=tmp_path).stdout
    (tmp_path / "c.py").write_text(textwrap.dedent(CERTAIN))
    assert "CG018" in flake8("--select", "CG", "c.py", cwd=tmp_path).stdout


# -- the reduction keeps what the new analyses read ---------------------------------------------------
FILLER = "\n".join(f"def unrelated_{i}(a):\n    return a + {i}\n" for i in range(30))


@pytest.mark.parametrize("source", [
    # a helper's body: its return is a tensor
    "import tensorflow as tf\n" + FILLER + """
def first(t):
    return tf.gather(t, 0)

@tf.custom_gradient
def op(x):
    if first(x) > 0:
        x = -x
    return x, lambda dy: dy
""",
    # a module-level object whose class holds a variable
    "import tensorflow as tf\n" + FILLER + """
class Config:
    def __init__(self):
        self.scale = tf.Variable(3.0)

config = Config()

@tf.custom_gradient
def op(x):
    return x * config.scale, lambda dy: dy
""",
    # a dataclass field
    "import dataclasses\nimport tensorflow as tf\n" + FILLER + """
@dataclasses.dataclass
class Params:
    gain: tf.Variable

params = Params(tf.Variable(2.0))

@tf.custom_gradient
def op(x):
    return x * params.gain, lambda dy: dy
""",
    # the module runs its functions eagerly
    "import tensorflow as tf\n" + FILLER + """
tf.config.run_functions_eagerly(True)

@tf.custom_gradient
def op(x):
    if tf.reduce_sum(x) > 0:
        x = -x
    return x, lambda dy: dy
""",
    # the experimental spelling of the switch
    "import tensorflow as tf\n" + FILLER + """
tf.config.experimental_run_functions_eagerly(True)

@tf.custom_gradient
def op(x):
    if tf.reduce_sum(x) > 0:
        x = -x
    return x, lambda dy: dy
""",
], ids=["helper", "object-class", "dataclass", "run-eagerly", "experimental-switch"])
def test_the_reduction_changes_no_finding_of_the_new_analyses(source):
    reduced = lint_source(source, "module.py", ALL)
    full = lint_source(source, "module.py", ALL, reduce=False)
    assert [(f.line, f.code, f.message) for f in reduced.findings] == [
        (f.line, f.code, f.message) for f in full.findings]
    assert reduced.findings or "run_functions_eagerly" in source
