"""Which definitions the model finds: every spelling of TF's decorator, and none of the look-alikes."""

from __future__ import annotations

import sys
import textwrap

import pytest

from cg_lint.api import find_custom_gradients, lint_source
from cg_lint.config import Settings


def defs(source: str, path: str = "m.py", **settings):
    return find_custom_gradients(textwrap.dedent(source), path, Settings(**settings))


def names(source: str, **settings) -> list[str]:
    return [d.qualname for d in defs(source, **settings)]


BODY = """
    def grad(dy):
        return dy
    return x, grad
"""


@pytest.mark.parametrize(
    "header",
    [
        "import tensorflow as tf\n@tf.custom_gradient",
        "import tensorflow\n@tensorflow.custom_gradient",
        "import tensorflow as tf\n@tf.compat.v1.custom_gradient",
        "import tensorflow.compat.v1 as tf\n@tf.custom_gradient",
        "from tensorflow import custom_gradient\n@custom_gradient",
        "from tensorflow import custom_gradient as cg\n@cg",
        "from tensorflow.python.ops import custom_gradient\n@custom_gradient.custom_gradient",
        "from tensorflow.python.ops.custom_gradient import custom_gradient\n@custom_gradient",
        "import keras\n@keras.ops.custom_gradient",
        "from keras import ops\n@ops.custom_gradient",
        "from tensorflow import *\n@custom_gradient",
        "import tensorflow as tf\n@tf.custom_gradient()",
        # a package that re-exports TensorFlow, and the optional-import fallback
        "from mypkg import tf\n@tf.custom_gradient",
        "from .backend import tf\n@tf.custom_gradient",
        "try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = None\n@tf.custom_gradient",
        "import tensorflow as tf\n@tf.compat.v2.custom_gradient",
    ],
)
def test_decorator_spellings(header):
    source = header + "\ndef f(x):" + textwrap.indent(textwrap.dedent(BODY), "    ")
    assert names(source) == ["f"]


@pytest.mark.parametrize(
    "source",
    [
        # TFP's helper is another API, even imported under TF's usual alias
        "import tensorflow_probability as tf\n@tf.custom_gradient\ndef f(x):\n    return x\n",
        "from tensorflow_probability.python.internal.backend.numpy import tf\n@tf.custom_gradient\n"
        "def f(x):\n    return x\n",
        "from tensorflow_probability.python.internal import custom_gradient as tfp_cg\n"
        "g = tfp_cg.custom_gradient(vjp_fwd=fwd, vjp_bwd=bwd)(f)\n",
        "import tensorflow as tf\ng = tf.custom_gradient(vjp_fwd=fwd, vjp_bwd=bwd)\n",
        "import mesh_tensorflow as mtf\ny = mtf.custom_gradient(fn, grad_fn, [x])\n",
        "import jax\n@jax.custom_gradient\ndef f(x):\n    return x, lambda g: g\n",
        # a local function that happens to have the name
        "def custom_gradient(f):\n    return f\n@custom_gradient\ndef f(x):\n    return x\n",
        # shadowed inside a function by a parameter
        "from tensorflow import custom_gradient\n"
        "def build(custom_gradient):\n    @custom_gradient\n    def f(x):\n        return x\n    return f\n",
        # mentioned only in a string or a comment
        "# @tf.custom_gradient\ndoc = '@tf.custom_gradient'\n",
    ],
)
def test_look_alikes_are_not_custom_gradients(source):
    assert names(source) == []


def test_call_forms():
    found = defs("""
        import tensorflow as tf

        def f(x):
            return x, lambda dy: dy

        g = tf.custom_gradient(f)
        h = tf.custom_gradient(f=lambda x: (x, lambda dy: dy))
    """)
    assert [(d.qualname, d.name, d.kind) for d in found] == [("f", "g", "function"), ("<lambda>", "h", "lambda")]


def test_methods_drop_self_and_static_methods_do_not():
    found = defs("""
        import tensorflow as tf

        class Layer:
            @tf.custom_gradient
            def call(self, x, y):
                return x, lambda dx: (dx, dx)

            @staticmethod
            @tf.custom_gradient
            def helper(x):
                return x, lambda dx: dx

            @tf.custom_gradient
            @classmethod
            def build(cls, x):
                return x, lambda dx: dx
    """)
    assert [(d.qualname, d.kind, d.inputs) for d in found] == [
        ("Layer.call", "method", ("x", "y")),
        ("Layer.helper", "staticmethod", ("x",)),
        ("Layer.build", "classmethod", ("x",)),
    ]


def test_nested_in_functions_and_call_and_varargs():
    found = defs("""
        import tensorflow as tf

        class Block(tf.keras.layers.Layer):
            def call(self, inputs):
                @tf.custom_gradient
                def inner(*args):
                    return args[0], lambda dy: [dy] + [None] * (len(args) - 1)
                return inner(inputs, 2.0)
    """)
    assert [(d.qualname, d.kind, d.has_varargs) for d in found] == [("Block.call.<locals>.inner", "nested", True)]


def test_relative_import_resolved_against_the_package(tmp_path):
    pkg = tmp_path / "tensorflow" / "python" / "ops"
    pkg.mkdir(parents=True)
    for folder in (tmp_path / "tensorflow", tmp_path / "tensorflow" / "python", pkg):
        (folder / "__init__.py").write_text("")
    source = "from . import custom_gradient\n@custom_gradient.custom_gradient\ndef f(x):\n    return x, lambda d: d\n"
    assert [d.qualname for d in find_custom_gradients(source, str(pkg / "nn.py"))] == ["f"]


def test_tensorflows_own_definition_module(tmp_path):
    pkg = tmp_path / "tensorflow" / "python" / "ops"
    pkg.mkdir(parents=True)
    for folder in (tmp_path / "tensorflow", tmp_path / "tensorflow" / "python", pkg):
        (folder / "__init__.py").write_text("")
    source = (
        "def custom_gradient(f=None):\n    return f\n\n"
        "def grad_pass_through(f):\n    @custom_gradient\n    def op(*args):\n"
        "        return f(*args), lambda *dys: dys\n    return op\n"
    )
    assert [d.qualname for d in find_custom_gradients(source, str(pkg / "custom_gradient.py"))] == [
        "grad_pass_through.<locals>.op"
    ]


def test_configured_wrapper_names():
    source = "from mylib.grads import surrogate\n@surrogate\ndef f(x):\n    return x, lambda d: d\n"
    assert names(source) == []
    assert names(source, decorators=frozenset({"mylib.grads.surrogate"})) == ["f"]


def test_positions_are_the_def_name():
    found = defs("""
        import tensorflow as tf

        @tf.custom_gradient
        def f(x):
            return x, lambda d: d
    """)
    assert (found[0].line, found[0].column) == (5, 5)  # line 1 is the blank after """


def test_pathological_nesting_is_refused_not_crashed():
    # libcst can crash the whole process on expressions nested thousands deep; runtime-check calls this
    deep = "import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n    return " + "1+" * 8000 + "1, lambda d: d\n"
    assert find_custom_gradients(deep, "deep.py") == []


# -- TensorFlow handed out as `tf` by a module of a wrapping package (lingvo's `compat`) ----------

_CG_FILE = "@tf.custom_gradient\ndef f(x):\n    return x, lambda d: d\n"


def _package(root, compat: str):
    """``mypkg/compat.py`` holding ``compat`` and an empty ``mypkg/core`` beside it, under ``root``."""
    core = root / "mypkg" / "core"
    core.mkdir(parents=True)
    (root / "mypkg" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("")
    (root / "mypkg" / "compat.py").write_text(compat)
    return core / "layer.py"


@pytest.mark.parametrize("compat", [
    "from tensorflow.compat.v2 import *\nfrom absl import flags\n",
    "import os\nfrom tensorflow.compat.v1 import *\n",
    "from tensorflow import custom_gradient\n",
])
@pytest.mark.parametrize("header", [
    "from mypkg import compat as tf\n",
    "import mypkg.compat as tf\n",
    "from .. import compat as tf\n",
    "try:\n    from mypkg import compat as tf\nexcept ImportError:\n    import tensorflow.compat.v1 as tf\n",
])
def test_tf_from_a_project_module_that_reexports_tensorflow(tmp_path, compat, header):
    layer = _package(tmp_path, compat)
    assert [d.qualname for d in find_custom_gradients(header + _CG_FILE, str(layer))] == ["f"]


@pytest.mark.parametrize("compat", [
    # a backend of its own under the same name: another API
    "import numpy as np\ndef custom_gradient(*grad_funcs):\n    return lambda f: f\n",
    # TensorFlow's, then replaced
    "from tensorflow.compat.v2 import *\ndef custom_gradient(fn, grad_fn, inputs):\n    return fn(*inputs)\n",
    "from tensorflow.compat.v2 import *\nfrom mylib.backend import *\n",
    "from tensorflow.compat.v2 import *\ncustom_gradient = None\n",
    # TensorFlow imported, but not bound as the module's custom_gradient
    "import tensorflow as tf\n",
    "from tensorflow import custom_gradient as cg\n",
    "def load():\n    from tensorflow import *\n",
    "from mesh_tensorflow import *\n",
    "this is not Python (\n",
])
def test_tf_from_a_project_module_that_is_not_tensorflow(tmp_path, compat):
    layer = _package(tmp_path, compat)
    assert find_custom_gradients("from mypkg import compat as tf\n" + _CG_FILE, str(layer)) == []


@pytest.mark.parametrize("source", [
    # the alias must be `tf`: a module re-exporting TF under another name is not assumed
    "from mypkg import compat as tfc\n@tfc.custom_gradient\ndef f(x):\n    return x, lambda d: d\n",
    # and the decorator must be read off it: `from mypkg.compat import custom_gradient` is not followed
    "from mypkg.compat import custom_gradient\n@custom_gradient\ndef f(x):\n    return x, lambda d: d\n",
    # a module that cannot be found stays unknown
    "from otherpkg import compat as tf\n" + _CG_FILE,
    # known libraries that are not TensorFlow are never read, whatever alias they get
    "from tensorflow_probability.python.internal.backend.jax import v2 as tf\n" + _CG_FILE,
    "from jax import numpy as tf\n" + _CG_FILE,
    "import mesh_tensorflow as tf\ny = tf.custom_gradient(fn, grad_fn, [x])\n",
])
def test_tf_alias_conditions(tmp_path, source):
    layer = _package(tmp_path, "from tensorflow.compat.v2 import *\n")
    assert find_custom_gradients(source, str(layer)) == []


def test_tf_from_a_module_on_the_import_path(tmp_path, monkeypatch):
    # a wrapping package installed beside the project (here: a folder put on sys.path), read by path
    site = tmp_path / "site"
    (site / "wrapper").mkdir(parents=True)
    (site / "wrapper" / "__init__.py").write_text("")
    (site / "wrapper" / "compat.py").write_text("from tensorflow.compat.v2 import *\n")
    monkeypatch.syspath_prepend(str(site))
    project = tmp_path / "project"
    project.mkdir()
    source = "from wrapper import compat as tf\n" + _CG_FILE
    assert [d.qualname for d in find_custom_gradients(source, str(project / "m.py"))] == ["f"]
    assert "wrapper" not in sys.modules  # read, never imported


def test_a_bug_under_the_wrapped_tf_is_reported(tmp_path):
    layer = _package(tmp_path, "from tensorflow.compat.v2 import *\n")
    source = ("from mypkg import compat as tf\n@tf.custom_gradient\ndef f(x):\n"
              "    def grad(dy, extra):\n        return dy\n    return x * 2.0, grad\n")
    findings, error = lint_source(source, str(layer))
    assert error is None and [f.code for f in findings] == ["CG002"]
    findings, _ = lint_source(source.replace("compat as tf", "compat as tfc").replace("@tf.", "@tfc."), str(layer))
    assert findings == []
