"""The server's conversions on real lint results: noqa edits, positions, minimal edits."""

from __future__ import annotations

import textwrap

from cg_lint.config import Settings
from cg_lint.engine import lint_source
from cg_lint.server import convert

FORWARD = textwrap.dedent("""\
    import tensorflow as tf


    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy
        return x, x, {tail}
""")


def utf16(text: str) -> int:
    return convert.utf16_units(text)


def apply(text: str, edit) -> str:
    lines = convert.split_lines(text)
    start = (
        sum(len(line) + 1 for line in lines[: edit.range.start.line]) + edit.range.start.character
    )
    end = sum(len(line) + 1 for line in lines[: edit.range.end.line]) + edit.range.end.character
    return text[:start] + edit.new_text + text[end:]


def only_finding(text: str):
    [finding] = lint_source(text, "f.py", Settings()).findings
    return finding


def test_noqa_is_added_at_the_end_of_the_reported_line_and_silences():
    text = FORWARD.format(tail="grad")
    finding = only_finding(text)
    edit = convert.noqa_edit(text, convert.split_lines(text), finding, utf16)
    fixed = apply(text, edit)
    assert fixed.splitlines()[7] == "    return x, x, grad  # noqa: CG001"
    assert lint_source(fixed, "f.py", Settings()).findings == []


def test_noqa_codes_already_there_are_extended():
    text = FORWARD.format(tail="grad  # noqa: CG003")
    finding = only_finding(text)
    fixed = apply(text, convert.noqa_edit(text, convert.split_lines(text), finding, utf16))
    assert fixed.splitlines()[7] == "    return x, x, grad  # noqa: CG003,CG001"
    assert lint_source(fixed, "f.py", Settings()).findings == []


def test_no_noqa_where_a_comment_would_change_the_code():
    # the reported line is continued by a backslash: a comment there ends the statement
    text = FORWARD.format(tail="\\\n        grad")
    finding = only_finding(text)
    assert finding.code == "CG001" and text.splitlines()[finding.line - 1].endswith("\\")
    assert convert.noqa_edit(text, convert.split_lines(text), finding, utf16) is None
    assert finding.fix is not None  # the fix itself is still offered


def test_minimal_edit_spans_only_the_changed_lines():
    before = "a\nb\nc\nd\n"
    for after in (
        "a\nB\nc\nd\n",
        "a\nc\nd\n",
        "a\nb\nb2\nc\nd\n",
        "x\n",
        "a\nb\nc\nd",
        "",
        "a\nb\nc\nd\ne\n",
    ):
        edit = convert.minimal_edit(before, after, len)
        assert apply(before, edit) == after
    edit = convert.minimal_edit(before, "a\nB\nc\nd\n", len)
    assert (edit.range.start.line, edit.range.end.line, edit.new_text) == (1, 2, "B\n")


def test_positions_count_utf16_units_and_clamp():
    lines = convert.split_lines("x = '\U0001f600'; y\n")
    pos = convert.position(lines, 1, 10, convert.utf16_units)  # the 10th character: 'y'
    assert (pos.line, pos.character) == (0, 10)  # 9 characters before it, one of them 2 units
    assert convert.position(lines, 5, 3, len).line == 4  # past the end: no IndexError
