"""Parsing one top-level statement at a time, with a cache (cg_lint.prefilter.parse_cache), against libcst.

The reference is always ``cst.parse_module`` of the whole text: the same code, a tree that
``deep_equals`` it, the same findings at the same positions. Two things are not the text itself but
libcst's whole parse drops them too, so the comparison is with its code: a final ``\\r`` (old Mac
line endings), a form feed just before a statement and a line holding only a backslash.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bench.gen_cg import generate
from cg_lint import prefilter
from cg_lint.config import Settings
from cg_lint.engine import Caches, FileResult, lint_source
from cg_lint.prefilter.parse_cache import ChunkCache, parse_by_statement, parse_with_cache
from cg_lint.prefilter.lines import groups
from cg_lint.rules import ALL_RULES
from lint_helpers import ROOT
from test_rule_examples import _doc_block

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")
ALL = Settings(select=("ALL",))
DATA = Path(__file__).parent / "data"
EXAMPLES = int(os.environ.get("CG_LINT_EXAMPLES", "40"))


# one owner for the whole module, as an editor's process keeps one across saves
CACHES = Caches()
CHUNKS = CACHES.chunks


def starts_of(text: str) -> list[int]:
    """What ``Plan.starts`` is for an unreduced text."""
    return [first for first, _ in groups(ast.parse(text).body)[1]]


def assert_unique_nodes(module: cst.Module) -> None:
    """No node object twice: parent maps and positions are keyed by identity."""
    seen: set[int] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        assert id(node) not in seen, f"{type(node).__name__} appears twice"
        seen.add(id(node))
        stack.extend(node.children)


def assert_same_parse(text: str, starts: list[int] | None = None, *, by_statement: bool = True,
                      chunks: ChunkCache = CHUNKS) -> cst.Module:
    """The assembled module is the whole parse; ``by_statement``: without falling back to it."""
    starts = starts_of(text) if starts is None else starts
    whole = cst.parse_module(text)
    module = parse_with_cache(text, starts, chunks)
    assert module.code == whole.code
    assert module.deep_equals(whole)
    assert_unique_nodes(module)
    assert (parse_by_statement(text, starts, chunks) is not None) == by_statement
    return module


def findings(result: FileResult) -> tuple:
    return [f.to_json() for f in result.findings], result.error, result.parsed


def assert_same_lint(text: str, path: str = "example.py") -> None:
    cached = lint_source(text, path, ALL, caches=CACHES)
    assert findings(cached) == findings(lint_source(text, path, ALL))


# -- corpus: rule examples, examples/, the generated benchmark file, real custom-gradient files ---

def _rule_texts() -> list:
    out = []
    for rule in ALL_RULES:
        for kind in ("VALID", "INVALID"):
            for i, example in enumerate(getattr(rule, kind)):
                out.append(pytest.param(textwrap.dedent(example), id=f"{rule.code}-{kind.lower()}-{i}"))
        for heading in ("Example", "Use instead"):
            out.append(pytest.param(_doc_block(rule, heading), id=f"{rule.code}-doc-{heading.replace(' ', '-')}"))
    return out


FILES = sorted([*(ROOT / "examples").rglob("*.py"), *DATA.glob("*.py"), ROOT / "bench" / "gen_cg.py"])
CORPUS = [*_rule_texts(),
          *(pytest.param(p.read_text(encoding="utf-8"), id=str(p.relative_to(ROOT))) for p in FILES),
          pytest.param(generate(2000), id="gen_cg-2000")]


@pytest.mark.parametrize("text", CORPUS)
def test_corpus_parses_and_lints_the_same(text: str) -> None:
    assert_same_parse(text)
    plan = prefilter.plan(text, prefilter.markers())
    if not plan.skip and plan.error is None:  # what the engine parses: the reduced text
        assert_same_parse(plan.text, plan.starts)
    assert_same_lint(text)


# -- hand-written layouts --------------------------------------------------------------------------

TRICKY = {
    "comments between and after defs": (
        "import tensorflow as tf\n\n\ndef f(x):\n    if x:\n        return 1\n        # deep\n    # mid\n"
        "# top\n\n    # mid again\n\n\ndef g():\n    pass\n    # trailing at 4\n\n# col0\n        # deeper\n"
        "x = 1\n"),
    "comment at an odd indent after a block": "def f():\n    return 1\n\n  # two\nx = 1\n",
    "whitespace-only lines after a block": "def f():\n    return 1\n    \n  \n\t\nx = 1\n   \n",
    "crlf": "import tf\r\n\r\ndef f():\r\n    return 1\r\n\r\n# c\r\nx = 1\r\n",
    "cr": "import tf\r\rdef f():\r    return 1\r\r# c\rx = 1\r",
    "no trailing newline": "def f():\n    return 1\n\nx = 1",
    "no trailing newline after a comment": "def f():\n    return 1\n\nx = 1\n# end",
    "no trailing newline after an indented comment": "def f():\n    return 1\n    # end",
    "tabs": "def f():\n\tif x:\n\t\treturn 1\n\nclass A:\n\tdef g(self):\n\t\tpass\n",
    "two spaces": "def f():\n  if x:\n    return 1\n\nclass A:\n  def g(self):\n    pass\n",
    "one-liners then blocks": (
        "if x: pass\nfor i in y: pass\nelse: pass\ntry: pass\nexcept E: pass\nfinally: pass\n"
        "def f(): return 1\nclass A: pass\nwhile 1: break\nwith a: pass\ndef g():\n  return 2\n"),
    "decorators with comments between them": (
        "import tf\n\n@tf.custom_gradient\n# between\n\n@other\n  # indented between\ndef f(x):\n"
        "    return x, None\n"),
    "statements sharing a line": "a = 1; b = 2\nc = 3;\nd = 4  # c\ne = 5; f = 6; \n",
    "class with blank and comment lines at its end": (
        "class A:\n    x = 1\n\n    # trailing comment\n\n    def f(self):\n        pass\n\n"
        "        # deep trailing\n\n\n# top trailing\n\nclass B:\n    pass\n"),
    "form feeds": "def f():\n    return 1\n\x0c\n\x0cdef g():\n    return 2\n\x0c# c\n",
    "header docstring and comments": (
        "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n# Copyright\n\n\"\"\"Doc.\"\"\"\n\n# comment\n"
        "import tf\n"),
    "last line a comment": "import tf\n\ndef f():\n    pass\n# last\n",
    "last line an indented comment": "import tf\n\ndef f():\n    pass\n    # last\n",
    "match with one-line cases sets the indent": "match x:\n  case 1: pass\ndef f():\n  return 1\n",
    "nested classes": "class A:\n    class B:\n        def f(self):\n            pass\n        # c\n    # d\n# e\nx = 1\n",
    "backslash continuation": "x = 1 + \\\n    2\ny = 3\n",
    "string spanning lines": "x = '''\n  not indented\ndef g():\n'''\ndef f():\n    pass\n",
    "same statement twice": "x = 1\n\nx = 1\n\ndef f():\n    pass\n\ndef f():\n    pass\n",
    "lines blanked by the prefilter": "import tf\n\n\n\n\n\n@tf.custom_gradient\ndef f(x):\n    return x, None\n\n\n\n",
    "one statement": "x = 1\n",
    "a lone backslash line before a statement": "x = 1\n\\\ny = 2\n",
}

FALLS_BACK = {
    "mixed indentation": "def f():\n  return 1\n\ndef g():\n    return 2\n",
    "tabs then spaces": "def f():\n    return 1\n\ndef g():\n\treturn 2\n",
    "match then another indent": "match x:\n  case 1: pass\ndef f():\n    return 1\n",
    "an else block's indent": "if a: pass\nelif b: pass\nelif c:\n  x = 1\nelse: pass\ndef f():\n    return 1\n",
    "a handler's indent": "try: pass\nexcept* E:\n  pass\ndef f():\n    return 1\n",
    "mixed newlines": "x = 1\r\ny = 2\nz = 3\r\n",
    # CPython sees two statements (two starts), libcst one: the first piece swallows the sentinel
    "a statement continued onto the next one's line": "x = 1; \\\ny = 2\n",
}


# libcst's whole parse does not give these back either (see the module's docstring)
LOSSY = {"cr", "form feeds", "a lone backslash line before a statement"}


@pytest.mark.parametrize("name", TRICKY)
def test_layouts(name: str) -> None:
    module = assert_same_parse(TRICKY[name])
    assert (module.code == TRICKY[name]) == (name not in LOSSY)


@pytest.mark.parametrize("text", FALLS_BACK.values(), ids=FALLS_BACK.keys())
def test_what_pieces_cannot_give_falls_back_to_the_whole_parse(text: str) -> None:
    assert_same_parse(text, by_statement=False)


def test_no_statements_or_no_starts() -> None:
    for text in ("", "# only a comment\n", "\n\n"):
        assert_same_parse(text, by_statement=False)
    assert parse_with_cache("x = 1\n", None, CHUNKS).deep_equals(cst.parse_module("x = 1\n"))
    assert parse_by_statement("x = 1\n", [], CHUNKS) is None
    assert parse_by_statement("x = 1\ny = 2\n", [2, 1], CHUNKS) is None  # not a cut libcst would make


def test_tricky_layouts_lint_the_same() -> None:
    head = "import tensorflow as tf\n\n@tf.custom_gradient\ndef op(x, y):\n    return x * y, lambda dy: dy\n"
    for text in (*TRICKY.values(), *FALLS_BACK.values()):
        assert_same_lint(head + "\n" + text + "\nz = op(1.0, 2.0)\n")


# -- the cache across calls ------------------------------------------------------------------------

def _ops(text: str) -> list[str]:
    """The generated file's custom-gradient functions, in file order."""
    return re.findall(r"^def (op_\d+)\(", text, re.M)


def _edit_function(text: str, name: str, constant: str) -> str:
    """Scale the forward value of one generated op: its body changes, nothing else."""
    edited, n = re.subn(rf"(def {name}\(.*\n.*\n    y = )", rf"\g<1>{constant} * ", text)
    assert n == 1
    return edited


def test_an_edit_reparses_only_what_changed() -> None:
    text = generate(2000)
    first = parse_with_cache(text, starts_of(text), CHUNKS)
    name = _ops(text)[5]
    edited = _edit_function(text, name, "3.0")
    second = assert_same_parse(edited)
    changed = [i for i, (a, b) in enumerate(zip(first.body, second.body)) if a is not b]
    index = next(i for i, s in enumerate(second.body) if isinstance(s, cst.FunctionDef) and s.name.value == name)
    # the edited statement, and the next one (the lines between them now come from a new piece)
    assert changed == [index, index + 1]
    # a line added above shifts every later statement; their pieces are the same text
    shifted = edited.replace("EPS = 1e-6\n", "EPS = 1e-6\nTINY = 1e-9\n")
    third = assert_same_parse(shifted)
    kept = {id(s) for s in second.body} & {id(s) for s in third.body}
    assert len(kept) == len(second.body) - 2  # `EPS = ...` (its piece lost the blank lines) and the next


def test_an_edit_lints_the_same_and_in_place() -> None:
    text = generate(2000)
    bad = text.replace("        return dy * s\n", "        return dy * s, dy\n", 1)  # one grad too many
    for source in (text, _edit_function(text, _ops(text)[2], "2.0"), bad, "# a new first line\n" + bad):
        assert_same_lint(source, "ops.py")


def test_the_cache_is_bounded() -> None:
    cache = ChunkCache(5_000)
    small = "def f():\n    return 1\n\n\nx = f()\n"
    before = assert_same_parse(small, chunks=cache)
    assert assert_same_parse(small, chunks=cache).body[0] is before.body[0]  # it fits: kept
    text = generate(2000)
    assert_same_parse(text, chunks=cache)
    assert 0 < cache.chars <= cache.limit and len(text) > cache.limit
    assert assert_same_parse(small, chunks=cache).body[0] is not before.body[0]  # the big file pushed it out
    cache.limit = 0  # nothing fits: everything is parsed, nothing kept
    cache.clear()
    assert_same_parse(text, chunks=cache)
    assert (cache.chars, len(cache)) == (0, 0)


def test_a_piece_libcst_rejects_gives_the_whole_parse_error() -> None:
    # CPython accepts a parenthesized annotated target, libcst does not
    source = ("import tensorflow as tf\n\n\n@tf.custom_gradient\ndef f(x):\n    return x, lambda dy: dy\n\n\n"
              "(y): float = f(1.0)\n")
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(source)
    with pytest.raises(cst.ParserSyntaxError) as pieces:
        parse_with_cache(source, starts_of(source), CHUNKS)
    assert (pieces.value.raw_line, pieces.value.raw_column, pieces.value.message) == \
        (whole.value.raw_line, whole.value.raw_column, whole.value.message)
    cached = lint_source(source, "bad.py", ALL, caches=CACHES)
    assert cached.error is not None and cached.error.line == 9
    assert findings(cached) == findings(lint_source(source, "bad.py", ALL))


# -- real flake8, kept in one process across saves as an editor's language server does -------------

DRIVER = textwrap.dedent('''\
    import json, runpy, sys
    from pathlib import Path
    target, texts, out = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()), Path(sys.argv[3])
    reports = []
    for i, text in enumerate(texts):
        target.write_text(text, encoding="utf-8")
        report = out.with_suffix(f".{i}.txt")
        sys.argv = ["flake8", "--isolated", "--select", "CG", f"--output-file={report}", str(target)]
        try:
            runpy.run_module("flake8", run_name="__main__", alter_sys=True)
        except SystemExit:
            pass
        reports.append(report.read_text())
    from cg_lint.flake8_plugin import Plugin
    out.write_text(json.dumps({"reports": reports, "cached": len(Plugin.caches.chunks)}))
''')


def test_flake8_in_one_process_across_saves(tmp_path: Path) -> None:
    text = generate(600)
    saves = [text, _edit_function(text, _ops(text)[1], "2.0"),
             text.replace("        return dy * s\n", "        return dy * s, dy\n", 1),
             "import os\n" + text.replace("        return dy * s\n", "        return dy * s, dy\n", 1)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    target = tmp_path / "ops.py"
    (tmp_path / "driver.py").write_text(DRIVER)
    (tmp_path / "saves.json").write_text(json.dumps(saves))
    subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(target), str(tmp_path / "saves.json"),
                    str(tmp_path / "out.json")], env=env, check=True, timeout=300, cwd=tmp_path)
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["cached"] > 0
    fresh = []
    for save in saves:
        target.write_text(save, encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", str(target)],
                              env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        fresh.append(proc.stdout)
    assert out["reports"] == fresh
    assert fresh[2] and fresh[2] != fresh[3]  # the finding, then the same one a line lower


# -- mutations of real custom-gradient files ------------------------------------------------------

SOURCES = [DATA / "cg_ops.py", DATA / "cg_layer.py", *sorted((ROOT / "examples").rglob("*.py"))]
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _mutate(text: str, rnd: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rnd.randint(1, 6)):
        if not lines:
            break
        at = rnd.randrange(len(lines))
        if rnd.random() < 0.5:
            del lines[at]
        else:
            lines.insert(at, lines[rnd.randrange(len(lines))])
    return "".join(lines)


@FUZZ
@given(st.sampled_from(SOURCES), st.randoms(use_true_random=False))
def test_mutated_real_sources(path: Path, rnd: random.Random) -> None:
    text = _mutate(path.read_text(encoding="utf-8"), rnd)
    try:
        starts = starts_of(text)
    except SyntaxError:
        return  # CPython rejects it: never handed to libcst
    try:
        whole = cst.parse_module(text)
    except cst.ParserSyntaxError:
        with pytest.raises(cst.ParserSyntaxError):
            parse_with_cache(text, starts, CHUNKS)
    else:
        module = parse_with_cache(text, starts, CHUNKS)
        assert module.code == whole.code and module.deep_equals(whole)
        assert_unique_nodes(module)
    assert_same_lint(text, path.name)


# -- every candidate file of the installed TensorFlow and Keras ----------------------------------

def _installed_candidates() -> list[Path]:
    out: list[Path] = []
    for name in ("tensorflow", "keras"):
        spec = importlib.util.find_spec(name)
        for root in (spec.submodule_search_locations or []) if spec else []:
            out.extend(p for p in sorted(Path(root).rglob("*.py")) if b"custom_gradient" in p.read_bytes())
    return out


@pytest.mark.slow
def test_installed_tensorflow_and_keras_lint_the_same() -> None:
    files = _installed_candidates()
    if not files:
        pytest.skip("tensorflow / keras not installed")
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            assert_same_parse(text)
        except SyntaxError:
            continue
        assert_same_lint(text, str(path))
