"""The server's incremental ``ast`` equals ``ast.parse`` of the whole text, after any edit.

Random edits (seeded, so a failure reproduces) on real sources: lines replaced, inserted, deleted,
characters typed or removed inside a line, indentation changed, brackets and quotes opened. After
each edit the tree is compared with a whole parse, positions included, or both must reject it.
"""

from __future__ import annotations

import ast
import random
import re

import pytest

from bench.gen_cg import generate
from cg_lint.server.incremental_ast import IncrementalAst
from lint_helpers import ROOT

SOURCES = {
    "arity": (ROOT / "examples" / "arity.py").read_text(encoding="utf-8"),
    "variables": (ROOT / "examples" / "variables.py").read_text(encoding="utf-8"),
    "generated": generate(300),
}
SNIPPETS = [
    "",
    "    ",
    "x = 1",
    "    y = 2",
    "def f(:",
    "(",
    ")",
    '"""',
    "'",
    "\\",
    "# c",
    "if x:",
    "@tf.custom_gradient",
    "class C:",
    "    return x, grad",
    "pass",
    "\tz = 3",
    "x = [1,",
    "]",
]


def dump(tree: ast.AST | None) -> str | None:
    return None if tree is None else ast.dump(tree, include_attributes=True)


def whole(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def mutate(text: str, rnd: random.Random) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    i = rnd.randrange(len(lines))
    kind = rnd.randrange(6)
    if kind == 0:  # type inside a line
        line = lines[i]
        at = rnd.randrange(len(line) + 1)
        lines[i] = line[:at] + rnd.choice(["a", "1", " ", "(", ")", ":", ",", "'"]) + line[at:]
    elif kind == 1:  # delete inside a line
        line = lines[i]
        if len(line) > 1:
            at = rnd.randrange(len(line) - 1)
            lines[i] = line[:at] + line[at + 1 :]
    elif kind == 2:  # replace a line
        lines[i] = rnd.choice(SNIPPETS) + "\n"
    elif kind == 3:  # insert a line
        lines.insert(i, rnd.choice(SNIPPETS) + "\n")
    elif kind == 4:  # delete a line
        del lines[i]
    else:  # re-indent a line
        lines[i] = ("    " + lines[i]) if rnd.random() < 0.5 else lines[i].lstrip(" ")
    return "".join(lines)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_random_edits_give_the_whole_parse(name):
    rnd = random.Random(f"incremental-{name}")
    base = SOURCES[name]
    inc = IncrementalAst()
    assert dump(inc.parse(base)) == dump(ast.parse(base))
    partial = 0
    text = base
    for step in range(1000):
        # mostly small walks away from a valid text, as typing is; back to the base now and then
        text = base if step % 5 == 0 else mutate(text, rnd)
        got, expected = dump(inc.parse(text)), dump(whole(text))
        assert got == expected, f"step {step}: {text!r}"
        if expected is not None and 0 < inc.reparsed_lines < len(text.splitlines()):
            partial += 1
    assert partial > 50  # the incremental path was taken, not only the fallback


def test_an_edit_inside_one_function_reparses_only_it():
    text = generate(2000)
    inc = IncrementalAst()
    inc.parse(text)
    edited = re.sub(r"(def op_40\(.*\n.*\n    y = )", r"\g<1>2.0 * ", text, count=1)
    assert edited != text
    assert dump(inc.parse(edited)) == dump(ast.parse(edited))
    assert 0 < inc.reparsed_lines < 20
    assert inc.parse(edited) is inc.tree and inc.reparsed_lines == 0  # unchanged: the same tree


def test_line_ends_are_cpythons():
    # \f and \x0b are not line ends for CPython (str.splitlines would say they are)
    text = "x = 1\n\x0cy = 2\r\nz = '\x0b'\rw = 4\n"
    inc = IncrementalAst()
    inc.parse(text)
    edited = text.replace("w = 4", "w = 5")
    assert dump(inc.parse(edited)) == dump(ast.parse(edited))
