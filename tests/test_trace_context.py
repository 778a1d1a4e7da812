"""Trace context: graph-mode findings only where the project can run the definition under
tf.function (cg_lint/project). Each project is a small tree of our own in tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cg_lint.cli import main

OPS = """
    import tensorflow as tf


    @tf.custom_gradient
    def clip(x):
        y = tf.clip_by_value(x, -1.0, 1.0)

        def grad(dy):
            if tf.reduce_all(tf.abs(x) < 1.0):
                return dy
            return dy * 0.5

        return y, grad
"""


def _tree(root: Path, files: dict[str, str], marker: str | None = ".git") -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    if marker == ".git":
        (root / ".git").mkdir(exist_ok=True)
    elif marker is not None:
        (root / marker).write_text(textwrap.dedent(marker_text(marker)))
    return root


def marker_text(marker: str) -> str:
    return '[project]\nname = "pkg"\n' if marker == "pyproject.toml" else ""


def _findings(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    code = main(["--no-cache", "--format", "json", *args])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


def _codes(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    return [f["code"] for f in _findings(capsys, *args)]


TRACED = {
    "tf.function in another module": {"train.py": """
        import tensorflow as tf
        from ops import clip

        @tf.function
        def step(x):
            return clip(x)
    """},
    "through a helper to a tf.function": {"model.py": """
        from ops import clip

        def head(x):
            return clip(x) * 2.0
    """, "train.py": """
        import tensorflow as tf
        import model

        @tf.function(jit_compile=False)
        def step(x):
            return model.head(x)
    """},
    "a Keras layer's call": {"layers.py": """
        import keras
        from ops import clip

        class Base(keras.layers.Layer):
            pass

        class Clipped(Base):
            def call(self, x):
                return clip(x)
    """},
    "tf.data map": {"data.py": """
        import tensorflow as tf
        from ops import clip

        def prep(x):
            return clip(x)

        ds = tf.data.Dataset.range(3).map(prep)
    """},
    "tf.function() of a lambda": {"train.py": """
        import tensorflow as tf
        from ops import clip

        step = tf.function(lambda x: clip(x))
    """},
    "strategy.run": {"train.py": """
        from ops import clip

        def replica(x):
            return clip(x)

        def go(strategy, x):
            return strategy.run(replica, args=(x,))
    """},
    "train_step of a Model": {"model.py": """
        import tensorflow as tf
        from ops import clip

        class Net(tf.keras.Model):
            def train_step(self, data):
                return clip(data)
    """},
}


@pytest.mark.parametrize("how", sorted(TRACED))
def test_traced_anywhere_in_the_project_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    how: str) -> None:
    root = _tree(tmp_path, {"ops.py": OPS, **TRACED[how]})
    found = _findings(capsys, str(root))
    assert [f["code"] for f in found] == ["CG009"]
    assert "(reached from" in found[0]["message"] or "passed to a tracing call" in found[0]["message"]


EAGER = {
    "a script's top level": {"run.py": """
        import tensorflow as tf
        from ops import clip

        print(clip(tf.constant([0.5])))
    """},
    "__main__ through a helper": {"train.py": """
        import tensorflow as tf
        from ops import clip

        def loss(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = clip(x)
            return tape.gradient(y, x)

        if __name__ == "__main__":
            loss(tf.constant([2.0]))
    """},
    "tf.py_function inside a tf.function": {"train.py": """
        import tensorflow as tf
        from ops import clip

        @tf.function
        def step(x):
            return tf.py_function(clip, [x], tf.float32)
    """},
    "nothing calls it": {},
    "run_functions_eagerly(True)": {"train.py": """
        import tensorflow as tf
        from ops import clip

        tf.config.run_functions_eagerly(True)

        def step(x):
            return clip(x)
    """},
    "builtin map is not tf.data": {"run.py": """
        from ops import clip

        def go(xs):
            return list(map(clip, xs))
    """},
}


@pytest.mark.parametrize("how", sorted(EAGER))
def test_eager_by_construction_is_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    root = _tree(tmp_path, {"ops.py": OPS, **EAGER[how]})
    assert _codes(capsys, str(root)) == []
    # the setting overrides the evidence
    assert _codes(capsys, "--trace-context", "always", str(root)) == ["CG009"]


def test_never_silences_even_traced_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, {"ops.py": OPS, **TRACED["tf.function in another module"]})
    assert _codes(capsys, "--trace-context", "never", str(root)) == []


def test_the_setting_from_pyproject(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, {"ops.py": OPS}, marker=None)
    (root / "pyproject.toml").write_text('[tool.cg_lint]\ntrace-context = "always"\n')
    assert _codes(capsys, str(root)) == ["CG009"]
    (root / "pyproject.toml").write_text('[tool.cg_lint]\ntrace-context = "sometimes"\n')
    assert main(["--no-cache", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "trace-context' must be one of auto, always, never" in err


def test_a_library_s_public_functions_may_be_traced_by_its_users(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": OPS, "tests/test_ops.py": OPS,
                            "pkg/_private.py": OPS.replace("def clip", "def _clip")}, marker="pyproject.toml")
    # a library that never traces anything is eager by design: nothing to report
    assert _codes(capsys, str(root)) == []
    (root / "pkg" / "layers.py").write_text("import tensorflow as tf\n\n@tf.function\ndef fast(x):\n    return x\n")
    found = _findings(capsys, str(root))
    # the package's public function; not the tests' copy, not a private module nobody calls
    assert [(Path(f["path"]).relative_to(root).as_posix(), f["code"]) for f in found] == [("pkg/ops.py", "CG009")]
    assert "public in the package `pkg`" in found[0]["message"]


def test_a_nested_definition_runs_when_its_factory_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    factory = """
        import tensorflow as tf

        def make(scale):
            @tf.custom_gradient
            def op(x):
                def grad(dy):
                    return dy * scale
                return tf.identity(x), grad
            return op
    """
    root = _tree(tmp_path, {"ops.py": factory.replace("return dy * scale", "return dy * float(x)"),
                            "run.py": "import ops\nprint(ops.make(2.0)(1.0))\n"})
    assert _codes(capsys, str(root)) == []
    (root / "train.py").write_text("import tensorflow as tf\nimport ops\nstep = tf.function(ops.make(2.0))\n")
    assert _codes(capsys, str(root)) == ["CG010"]


def test_stdin_uses_the_buffer_and_the_project_on_disk(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"ops.py": "", **TRACED["tf.function in another module"]})
    run = subprocess.run([sys.executable, "-m", "cg_lint", "--no-cache", "--format", "json", "--stdin-filename",
                          str(root / "ops.py"), "-"], input=textwrap.dedent(OPS), capture_output=True, text=True,
                         timeout=60)
    assert [f["code"] for f in json.loads(run.stdout)] == ["CG009"], run.stderr


def test_a_class_that_runs_functions_eagerly_before_its_methods(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bridge = """
        import tensorflow as tf

        class Bridge(tf.keras.layers.Layer):
            def __init__(self, fn):
                super().__init__()
                self.fn = fn
                tf.config.run_functions_eagerly(True)  # every tf.function below runs eagerly

            @tf.custom_gradient
            def forward(self, x):
                out = self.fn(x.numpy())
                return tf.constant(out), lambda dy: dy

            def call(self, x):
                return self.forward(x)
    """
    root = _tree(tmp_path, {"bridge.py": bridge})
    assert _codes(capsys, str(root)) == []
    (root / "bridge.py").write_text(textwrap.dedent(bridge).replace("tf.config.run", "# tf.config.run"))
    assert _codes(capsys, str(root)) == ["CG010"]


HANDS_TO_NUMPY = """
    import numpy as np
    import tensorflow as tf

    @tf.custom_gradient
    def render(scene, size, dtype=np.float32):
        pixels = np.asarray(scene.numpy(), dtype=dtype) * size  # computed outside TF on purpose
        if pixels.max() > 1.0:
            pixels = pixels / pixels.max()

        def grad(dy):
            return tf.constant(dy.numpy() * size, dtype=dy.dtype), None

        return tf.constant(pixels), grad

    def render_all(scenes):
        return [render(s, 2, dtype=np.float64) for s in scenes]
"""


def test_a_definition_that_leaves_tensorflow_is_one_finding_where_the_project_traces_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/render.py": HANDS_TO_NUMPY,
                            "pkg/layers.py": "import tensorflow as tf\n\n@tf.function\ndef fast(x):\n    return x\n"},
                 marker="pyproject.toml")
    # public in a library that traces elsewhere, but its authors left TF on purpose: quiet
    assert _codes(capsys, str(root)) == []
    (root / "pkg" / "train.py").write_text("import tensorflow as tf\nfrom pkg.render import render_all\n\n"
                                           "@tf.function\ndef step(x):\n    return render_all([x])\n")
    found = _findings(capsys, str(root))
    # one finding on the definition, not one per NumPy call, and no CG008 for its dtype keyword
    assert [(f["code"], f["line"]) for f in found] == [("CG010", 6)]
    assert "cannot run under tf.function" in found[0]["message"] and "scene.numpy()" in found[0]["message"]


BLEND = """
    import tensorflow as tf

    @tf.custom_gradient
    def blend(x, weights):
        y = x * weights[0] + weights[1]
        def grad(dy):
            return dy * weights[0], tf.reduce_sum(dy * x), tf.reduce_sum(dy)
        return y, grad
"""


@pytest.mark.parametrize(("call", "codes"), [
    ("blend(x, (a, b))", []),  # a tuple: TF flattens it into two inputs, three in all
    ("blend(x, cfg.weights)", []),  # an attribute may hold a tuple
    ("blend(x, a)", ["CG003"]),  # two inputs, three gradients
])
def test_counts_meet_the_calls_in_other_modules(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                call: str, codes: list[str]) -> None:
    use = f"from ops import blend\n\ndef run(x, a, b, cfg):\n    return {call}\n"
    root = _tree(tmp_path, {"ops.py": BLEND, "use.py": use})
    assert _codes(capsys, str(root)) == codes


@pytest.mark.parametrize("traced", [False, True])
def test_flake8_and_the_cli_agree_on_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 traced: bool) -> None:
    """flake8 sees one file, but the plugin reads the project around it as the CLI does."""
    pytest.importorskip("flake8")
    files = {"ops.py": OPS, **(TRACED["tf.function in another module"] if traced else EAGER["a script's top level"])}
    root = _tree(tmp_path, files)
    cli = [(f["line"], f["code"]) for f in _findings(capsys, str(root / "ops.py"))]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    run = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", "--cg-no-cache", "ops.py"],
                         cwd=root, capture_output=True, text=True, env=env, timeout=300)
    shown = [(int(line.split(":")[1]), line.split(": ")[1].split()[0]) for line in run.stdout.splitlines()]
    assert shown == cli == ([(10, "CG009")] if traced else [])


NUMPY_OPS = """
    import numpy as np
    import tensorflow as tf


    def _noise(a):
        return a + np.random.normal(size=a.shape)


    @tf.custom_gradient
    def noisy(x):
        y = tf.numpy_function(_noise, [x], tf.float32)
        width = y.shape[-1] * 2
        return y, lambda dy: dy
"""


@pytest.mark.parametrize("traced", [False, True])
def test_numpy_function_rules_follow_the_trace_context(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       traced: bool) -> None:
    """CG016 and CG017 fail only when traced: a script that calls the definition eagerly gets
    neither, a tf.function in another module gets both, and the message says where from."""
    run = """
        import tensorflow as tf
        from ops import noisy

        @tf.function
        def step(x):
            return noisy(x)
    """ if traced else """
        import tensorflow as tf
        from ops import noisy

        print(noisy(tf.constant([1.0, 2.0])))
    """
    root = _tree(tmp_path, {"ops.py": NUMPY_OPS, "run.py": run})
    found = _findings(capsys, str(root))
    assert [f["code"] for f in found] == (["CG016", "CG017"] if traced else [])
    assert all("reached from tf.function `step`" in f["message"] for f in found)
    assert _codes(capsys, "--trace-context", "always", str(root)) == ["CG016", "CG017"]
