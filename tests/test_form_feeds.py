"""Form feeds in indentation: every file CPython compiles parses, positions and fixes stay exact.

A form feed (optionally after blanks) at the start of a line is ignored by CPython's tokenizer;
libcst drops it or rejects the file. Each property inserts such prefixes into real programs
(the bundled examples, every rule's INVALID examples, and hypothesmith's generated programs), keeps
the variants CPython compiles to the same ``ast``, and compares with the program without them.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from cg_lint.config import Settings
from cg_lint.engine import lint_source
from cg_lint.fixes import fix_source
from cg_lint.prefilter.form_feeds import strip_form_feeds
from cg_lint.rules import ALL_RULES
from cg_lint.sources import split_lines

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("CG_LINT_EXAMPLES", "40"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])
ALL = Settings(select=("ALL",))
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
PROGRAMS = [p.read_text() for p in sorted((ROOT / "examples").glob("*.py"))] + [
    example for rule in ALL_RULES for example in rule.INVALID]
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


def _dump(text: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _insert(text: str, prefixes: dict[int, str]) -> str:
    lines = _LINE.findall(text)
    return "".join(prefixes.get(number, "") + line for number, line in enumerate(lines, start=1))


prefix = st.tuples(st.sampled_from(["", " ", "  ", "\t", " \t"]), st.sampled_from(["\f", "\f\f"])).map("".join)


@st.composite
def variants(draw):
    text = draw(st.sampled_from(PROGRAMS))
    count = len(_LINE.findall(text))
    lines = draw(st.sets(st.integers(1, max(1, count)), min_size=1, max_size=6))
    prefixes = {line: draw(prefix) for line in lines}
    return text, prefixes


@PROPERTY
@given(variants())
def test_form_feeds_change_no_finding_and_no_fix(case) -> None:
    text, prefixes = case
    variant = _insert(text, prefixes)
    assume(_dump(variant) is not None and _dump(variant) == _dump(text))
    plain, fed = lint_source(text, "m.py", ALL), lint_source(variant, "m.py", ALL)
    assert fed.error is None and plain.error is None, fed.error
    shift = {line: len(p) for line, p in prefixes.items()}
    assert [(f.line, f.column - shift.get(f.line, 0), f.code, f.message) for f in fed.findings] == \
        [(f.line, f.column, f.code, f.message) for f in plain.findings]
    fixed_plain, fixed_fed = fix_source(text, "m.py", ALL), fix_source(variant, "m.py", ALL)
    assert fixed_fed.error is None and fixed_fed.fixed == fixed_plain.fixed
    # fixes add no lines here, so the prefixes sit on the same lines of the fixed text
    assert fixed_fed.text == _insert(fixed_plain.text, prefixes)


@PROPERTY
@given(hypothesmith.from_grammar(), st.data())
def test_generated_programs_with_form_feeds_parse_like_without(program: str, data) -> None:
    text = "import tensorflow as tf\n" + program + "\n\n@tf.custom_gradient\ndef _f(x):\n    return x, lambda d: d\n"
    assume(_dump(text) is not None)
    count = len(_LINE.findall(text))
    lines = data.draw(st.sets(st.integers(1, count), min_size=1, max_size=8))
    prefixes = {line: data.draw(prefix) for line in lines}
    variant = _insert(text, prefixes)
    assume(_dump(variant) == _dump(text))
    plain, fed = lint_source(text, "m.py", ALL), lint_source(variant, "m.py", ALL)
    if plain.error is None:
        assert fed.error is None, fed.error
        assert [(f.line, f.code) for f in fed.findings] == [(f.line, f.code) for f in plain.findings]
    else:
        assert fed.error is not None and fed.error.message == plain.error.message


def test_strip_leaves_strings_and_continuations_alone() -> None:
    text = 'x = """\n\f  kept\n"""\ny = (1,\n\f 2)\nif x:\n  \f  z = 1\n'
    stripped, shifts = strip_form_feeds(text)
    assert shifts == {7: 3}
    assert stripped == text.replace("  \f  z", "  z")
    assert strip_form_feeds("x = 1\n") == ("x = 1\n", {})


def test_lines_are_numbered_as_python_does() -> None:
    assert split_lines("a\fb\r\nc\rd\ne\x1cf\u2028g") == ["a\fb", "c", "d", "e\x1cf\u2028g"]
    assert split_lines("a\n") == ["a"] and split_lines("") == []
