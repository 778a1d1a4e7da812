"""The prefilter is exact: it never drops a file, or a part of one, that the model needs.

Gate 2 (skip) and gate 3 (reduction) are checked against the full model: on hand-written cases, on
every rule's VALID/INVALID examples, on mutated variants of realistic sources (hypothesis), and, in
the slow test, on every candidate file of the installed TensorFlow, Keras and TFP trees.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import random
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from cg_lint import prefilter
from cg_lint.config import Settings
from cg_lint.engine import build_context, lint_source
from cg_lint.prefilter.lines import Layout
from cg_lint.prefilter.mentions import only_mentions
from cg_lint.prefilter.prepared import Prepared
from cg_lint.rules import ALL_RULES
from cg_lint.syntax.index import FileIndex
from cg_lint.syntax.positions import compute_ranges

DATA = Path(__file__).parent / "data"
ALL = Settings(select=("ALL",))
MARKERS = ALL.markers()


def records(text: str, path: str = "module.py", settings: Settings = ALL) -> list[tuple] | None:
    """Everything the model says about each definition (None when libcst cannot parse the text)."""
    try:
        module = cst.parse_module(text)
    except Exception:
        return None
    ctx = build_context(Prepared(text, module), path, settings)
    return [
        (r.qualname, r.line, r.column, r.kind, tuple(r.inputs), r.has_varargs, tuple(sorted(r.structured_params)),
         tuple((fr.site.line, None if fr.elements is None else len(fr.elements), fr.grad.name if fr.grad else None)
               for fr in r.returns),
         tuple((g.name, g.line, tuple(g.signature.names), len(g.returns)) for g in r.grads),
         tuple((c.line, c.column, len(c.positional), len(c.keywords), c.has_star, c.via_partial) for c in r.call_sites))
        for r in ctx.records
    ]


def assert_exact(text: str, path: str = "module.py", settings: Settings = ALL) -> None:
    """Gate 2 never skips a file with a definition; gate 3 changes no record and no finding."""
    full = records(text, path, settings)
    if only_mentions(text, settings.markers()):  # gate 1b answers only what gate 2 would
        tree = prefilter.parse_ast(text)
        if isinstance(tree, ast.Module):
            assert prefilter.plan(text, settings.markers(), tree).skip, "gate 1b skipped a file gate 2 keeps"
    plan = prefilter.plan(text, settings.markers())
    if plan.error is not None or full is None:
        return  # CPython or libcst rejects it: reported, not modelled
    if plan.skip:
        assert full == [], f"gate 2 skipped a file with definitions: {full}"
        return
    ast.parse(plan.text)  # the reduced text is still Python
    assert records(plan.text, path, settings) == full
    reduced = lint_source(text, path, settings)
    whole = lint_source(text, path, settings, reduce=False)
    assert reduced.findings == whole.findings
    assert (reduced.error is None) == (whole.error is None)


def sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DATA.glob("*.py"))}


# -- gate 2 -----------------------------------------------------------------------------------

SKIPPED = {
    "import only": "from tensorflow.python.ops.custom_gradient import custom_gradient\n",
    "reexport": "from keras.src.ops.core import custom_gradient as custom_gradient\n",
    "module attribute": "from tensorflow.python.ops import custom_gradient\nn = custom_gradient.generate_name()\n",
    "longer identifier": "experimental_custom_gradients = True\nx = opts.experimental_custom_gradients\n",
    "string and comment": "s = 'tf.custom_gradient'  # @tf.custom_gradient\n",
    "def and parameter names": "def custom_gradient(custom_gradient=None):\n    return 1\n",
    "keyword name": "f(custom_gradient=1)\n",
    "assignment target": "custom_gradient = lookup()\nself.custom_gradient = 2\n",
    "class name": "class custom_gradient:\n    pass\n",
}

KEPT = {
    "decorator": "import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n    return x, lambda d: d\n",
    "alias": "from tensorflow import custom_gradient as cg\n@cg\ndef f(x):\n    return x, lambda d: d\n",
    "alias in a function": "def outer():\n    from tensorflow import custom_gradient as cg\n    return cg(g)\n",
    "call form": "import tensorflow as tf\ng = tf.custom_gradient(f)\n",
    "value": "import tensorflow as tf\ncg = tf.custom_gradient\n",
    "parenthesised decorator": "import tensorflow as tf\n@(tf.custom_gradient)\ndef f(x):\n    return x, None\n",
    "decorator with call": "import tensorflow as tf\n@tf.custom_gradient()\ndef f(x):\n    return x, None\n",
    "star import": "from tensorflow import *\n@custom_gradient\ndef f(x):\n    return x, None\n",
    "method": "import tensorflow as tf\nclass A:\n    x = 1\n\n    @tf.custom_gradient\n    def f(self, x):\n        return x, None\n",
    "f-string": "import tensorflow as tf\ns = f'{tf.custom_gradient(g)(1)}'\n",
    "continued attribute": "import tensorflow as tf\n@tf.\\\ncustom_gradient\ndef f(x):\n    return x, None\n",
}


# -- gate 1b: mentions told apart without the ast ----------------------------------------------

MENTIONS = {
    **{k: v for k, v in SKIPPED.items() if k not in ("def and parameter names", "keyword name", "assignment target")},
    "docstring prose": 'def f():\n    """Wrap it in a tf.custom_gradient wrapper\n    and @tf.custom_gradient too.\n    """\n',
    "message": 'raise ValueError("an issue in a tf.custom_gradient.")\n',
    "same-name re-export": "from keras.src.ops.core import custom_gradient as custom_gradient  # line: 45\n",
    "imported under another name": "from a import b as custom_gradient\n",
    "module attribute in a call": "x = f(\n    custom_gradient.generate_name())\n",
    "quote in a comment": "# don't use custom_gradient here\nx = 1\n",
    "raw string": 'p = r"\\d custom_gradient \\"still\\" a string"\n',
}

NOT_MENTIONS = {
    **KEPT,
    "alias": "from tensorflow import custom_gradient as cg\n",
    "use after a docstring on its line": 's = """doc""" + str(custom_gradient(f))\n',
    "string glued to a keyword": 'x = 1 if y in"a " or custom_gradient(f) else "c"\n',
    "f-string literal": 'x = f"custom_gradient {y}"\n',
    "semicolon": "import tensorflow; tensorflow.custom_gradient(f)\n",
    "closing docstring then code": '"""\nend"""; custom_gradient(f)\n',
    "global": "def f():\n    global custom_gradient\n",
}


@pytest.mark.parametrize("name", sorted(MENTIONS))
def test_gate1b_skips_mentions_without_the_ast(name: str) -> None:
    assert only_mentions(MENTIONS[name], MARKERS)
    assert_exact(MENTIONS[name])


@pytest.mark.parametrize("name", sorted(NOT_MENTIONS))
def test_gate1b_leaves_possible_uses_to_the_ast(name: str) -> None:
    assert not only_mentions(NOT_MENTIONS[name], MARKERS)
    assert_exact(NOT_MENTIONS[name])


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_gate2_skips_files_that_cannot_define(name: str) -> None:
    assert prefilter.plan(SKIPPED[name], MARKERS).skip
    assert_exact(SKIPPED[name])


@pytest.mark.parametrize("name", sorted(KEPT))
def test_gate2_keeps_every_use(name: str) -> None:
    assert not prefilter.plan(KEPT[name], MARKERS).skip
    assert_exact(KEPT[name])


def test_stubs_keep_signatures_whose_body_shares_a_line() -> None:
    text = textwrap.dedent("""\
        import tensorflow as tf
        from typing import Any


        def helper(
            x: Any, y: Any = None
        ) -> Any: ...


        def other(a,
                  b): return a


        class Spec(object,
                   metaclass=type): x = 1


        class Holder:
            def m(self,
                  v) -> int: return 1

            def n(self): pass


        @tf.custom_gradient
        def f(x):
            return helper(x) + other(1, 2) + Spec.x + Holder().m(1), lambda dy: dy
        """)
    plan = prefilter.plan(text, MARKERS)
    ast.parse(plan.text)
    assert_exact(text)


def test_configured_names_are_markers() -> None:
    text = "from mylib.wrappers import my_cg\n@my_cg\ndef f(x):\n    return x, None\n"
    assert prefilter.plan(text, MARKERS).skip
    settings = Settings(select=("ALL",), decorators=frozenset({"mylib.wrappers.my_cg"}))
    assert not prefilter.plan(text, settings.markers()).skip
    assert records(text, settings=settings)
    assert_exact(text, settings=settings)


def test_data_files() -> None:
    for name, text in sources().items():
        assert_exact(text, name)
    assert prefilter.plan(sources()["not_cg.py"], MARKERS).skip


def test_reduction_blanks_line_for_line() -> None:
    text = sources()["cg_ops.py"]
    plan = prefilter.plan(text, MARKERS)
    assert not plan.skip and plan.kept < plan.total
    assert len(prefilter.split_lines(plan.text)) == len(prefilter.split_lines(text))
    for before, after in zip(prefilter.split_lines(text), prefilter.split_lines(plan.text)):
        assert after in (before, before[len(before.rstrip("\r\n")):]) or after.strip() == "..."


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_examples(rule) -> None:
    for example in (*rule.VALID, *rule.INVALID):
        source = textwrap.dedent(example)
        assert_exact(source)
        # the same example among unrelated code the reduction blanks
        padded = "import os\n\n\ndef unrelated(a):\n    return os.path.join(a, 'x')\n\n\n" + source
        assert_exact(padded)


def test_variables_rules_among_code_the_reduction_blanks() -> None:
    """Weights created in build()/__init__ and module-level variables survive the reduction."""
    filler = "\n".join(f"def helper_{i}(a, b):\n    return a * b + {i}\n" for i in range(200))
    layer = textwrap.dedent("""
        class Scale(keras.layers.Layer):
            def __init__(self, units):
                super().__init__()
                self.units = units

            def build(self, input_shape):
                self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

            def unrelated(self):
                return helper_3(1, 2)

            def call(self, x):
                @tf.custom_gradient
                def f(x):
                    def grad(dy):
                        return dy * self.w
                    return x * self.w * GAIN, grad
                return f(x)


        class Dense2(keras.layers.Dense):
            def call(self, x):
                @tf.custom_gradient
                def g(x):
                    y = tf.matmul(x, self.kernel)
                    def grad(dy):
                        return tf.matmul(dy, self.kernel, transpose_b=True)
                    return y, grad
                return g(x)
    """)
    text = "import tensorflow as tf\nimport keras\n\nGAIN = tf.Variable(2.0)\n\n" + filler + layer + filler.replace("helper_", "other_")
    assert_exact(text)
    codes = sorted(f.code for f in lint_source(text, "module.py", ALL).findings)
    assert codes == ["CG004", "CG004", "CG018", "CG018"]


SKELETON_LAYER = """\
import tensorflow as tf
import keras


class Scale(keras.layers.Layer):
    def build(self, input_shape):
        \"\"\"Creates the weight.\"\"\"
        units = input_shape[-1]
        message = "BUILD_BODY"
        if units > 1:
            self.w = self.add_weight(
                shape=(units,),
                initializer="ones",
            )
        else:
            def make():
                self.w = tf.Variable(1.0)
            make()

    @property
    def scale(self):
        return self.PROPERTY_BODY

    def call(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy):
                g = dy * self.w * self.scale
                return g
            return x * self.w, grad
        return f(x)


class Other:
    def grad(self):
        return OTHER_CLASS_BODY
"""

# `self.x = ...` that cannot leave its block without changing the model: the method stays whole
UNMOVABLE = {
    "shares a line": "x = 1; self.w = tf.Variable(1.0)",
    "after a header": "if ready: self.w = tf.Variable(1.0)",
    "shadowed module": "tf = fake\n        def make():\n            self.w = tf.Variable(1.0)",
    "shadowed in a nested def": "def make(tf):\n            self.w = tf.Variable(1.0)",
    "imported in a nested def": "def make():\n            from fake import tf\n            self.w = tf.Variable(1.0)",
    "after a parameter's tail": "check(x,\n              self.ok); self.w = tf.Variable(1.0)",
}
MOVABLE = {
    "imported in the method": "from tensorflow import Variable\n        if ready:\n            self.w = Variable(1.0)",
    "in a nested class": "class Holder:\n            self.w = tf.Variable(1.0)\n        self.v = 2",
    "multi-line string": "self.w = tf.Variable(1.0, name='''w\n  still the name''')\n        self.x = 2",
    "local names": "shape = (3,)\n        if ready:\n            self.w = tf.Variable(tf.ones(shape))",
}


def _layer_with(build_body: str, indent: str = "    ") -> str:
    text = ("import tensorflow as tf\n\n\nclass L:\n    def build(self, ready):\n        " + build_body
            + "\n        unrelated = 'BUILD_BODY'\n\n    def call(self, x):\n        @tf.custom_gradient\n"
              "        def f(x):\n            return x * self.w, lambda dy: dy\n        return f(x)\n")
    return text.replace("    ", indent)


def test_methods_kept_for_their_stores_become_skeletons() -> None:
    """A method kept only for its ``self.x = ...`` (or named like a ``self.x`` a full member reads)
    keeps its header and those statements, moved to the body's indentation."""
    assert_exact(SKELETON_LAYER)
    plan = prefilter.plan(SKELETON_LAYER, MARKERS)
    assert "BUILD_BODY" not in plan.text and "PROPERTY_BODY" not in plan.text
    assert "OTHER_CLASS_BODY" not in plan.text  # another class's `grad` is not the `grad` returned here
    assert "        self.w = self.add_weight(\n                shape=(units,)," in plan.text
    assert "        self.w = tf.Variable(1.0)\n" in plan.text
    assert "    def scale(self):\n        ...\n" in plan.text
    assert len(prefilter.split_lines(plan.text)) == len(prefilter.split_lines(SKELETON_LAYER))
    codes = [f.code for f in lint_source(SKELETON_LAYER, "module.py", ALL).findings]
    assert codes.count("CG004") == 1  # grad reads the weight and takes no `variables=`


@pytest.mark.parametrize("name", sorted(UNMOVABLE))
def test_unmovable_stores_keep_their_method_whole(name: str) -> None:
    text = _layer_with(UNMOVABLE[name])
    assert_exact(text)
    assert "BUILD_BODY" in prefilter.plan(text, MARKERS).text


@pytest.mark.parametrize("indent", ["    ", "\t"], ids=["spaces", "tabs"])
@pytest.mark.parametrize("name", sorted(MOVABLE))
def test_movable_stores_are_moved(name: str, indent: str) -> None:
    text = _layer_with(MOVABLE[name], indent)
    assert_exact(text)
    assert "BUILD_BODY" not in prefilter.plan(text, MARKERS).text


# -- variants ------------------------------------------------------------------------------

def _mutate(text: str, rnd: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    kind = rnd.choice(["delete", "duplicate", "rename", "shuffle", "indent", "alias"])
    if kind == "delete" and lines:
        for _ in range(rnd.randint(1, 4)):
            del lines[rnd.randrange(len(lines))]
    elif kind == "duplicate" and lines:
        i = rnd.randrange(len(lines))
        lines[i:i] = lines[i:i + rnd.randint(1, 12)]
    elif kind == "rename":
        old = rnd.choice(["grad", "x", "dy", "scaled", "tf", "ops", "self", "cg", "custom_gradient"])
        new = rnd.choice(["g2", "y", "upstream", "helper", "tensorflow", "cg", "custom_gradient"])
        return text.replace(old, new)
    elif kind == "shuffle":
        blocks = text.split("\n\n\n")
        rnd.shuffle(blocks)
        return "\n\n\n".join(blocks)
    elif kind == "indent" and lines:
        i = rnd.randrange(len(lines))
        lines[i] = "    " + lines[i]
    elif kind == "alias":
        return text.replace("import tensorflow as tf", "import tensorflow as tf\nfrom tensorflow import custom_gradient as tf_cg") \
                   .replace("@tf.custom_gradient", "@tf_cg", 1)
    return "".join(lines)


@hsettings(max_examples=int(os.environ.get("CG_LINT_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(p.name for p in DATA.glob("cg_*.py"))), st.randoms(use_true_random=False),
       st.integers(1, 3))
def test_variants_are_exact(name: str, rnd: random.Random, rounds: int) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    for _ in range(rounds):
        text = _mutate(text, rnd)
    assert_exact(text, name)


# -- positions -----------------------------------------------------------------------------

def test_positions_match_libcst() -> None:
    for name, text in sources().items():
        for variant in (text, text.replace("\n", "\r\n")):
            for reduce in (False, True):
                plan = prefilter.plan(variant, ("custom_gradient", "Layer"), reduce=reduce)
                if plan.skip:
                    continue
                module = cst.parse_module(plan.text)
                reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
                expected = {id(n): (r.start.line, r.start.column, r.end.line, r.end.column) for n, r in reference.items()}
                assert compute_ranges(module) == expected
                for order in (1, -1):  # per statement / per member, whichever is asked first
                    layout = Layout(plan.starts, prefilter.split_lines(plan.text), plan.members)
                    index = FileIndex(Prepared(plan.text, module, layout))
                    for node in index.nodes[1:][::order]:
                        assert index._range(node) == expected.get(id(node)), (name, type(node).__name__)


# -- the real trees (slow) ---------------------------------------------------------------------

def _installed(package: str) -> str | None:
    spec = importlib.util.find_spec(package)
    return None if spec is None or not spec.submodule_search_locations else list(spec.submodule_search_locations)[0]


@pytest.mark.slow
@pytest.mark.parametrize("package", ["tensorflow", "keras", "tensorflow_probability", "tf_keras"])
def test_real_trees_are_exact(package: str) -> None:
    root = _installed(package)
    if root is None:
        pytest.skip(f"{package} is not installed")
    checked = 0
    for folder, _, files in os.walk(root):
        for file in files:
            if not file.endswith(".py"):
                continue
            path = os.path.join(folder, file)
            data = Path(path).read_bytes()
            if b"custom_gradient" not in data:
                continue
            assert_exact(data.decode("utf-8"), path)
            checked += 1
    assert checked > 0
