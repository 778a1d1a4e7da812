"""Findings and fixes as LSP values: 0-based lines, columns in the client's code units.

cg-lint's positions are 1-based lines and 1-based columns counted in characters (code points),
with lines ended by ``\\r\\n``, ``\\r`` or ``\\n`` (libcst's and the LSP's rule, not
``str.splitlines``'s). The LSP counts columns in UTF-16 code units unless the client negotiated
another encoding, so every column goes through ``units``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence

from lsprotocol import types

from cg_lint.findings import Edit, Finding, Fix
from cg_lint.noqa import NOQA
from cg_lint.server.pages import rule_url

SOURCE = "cg-lint"
FIX_ALL_KIND = "source.fixAll.cg-lint"

_NEWLINE = re.compile(r"\r\n|\r|\n")

Units = Callable[[str], int]  # the length of a string in the client's code units


def split_lines(text: str) -> list[str]:
    """The document's lines as the LSP counts them (a final newline opens an empty last line)."""
    return _NEWLINE.split(text)


def utf16_units(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def position(lines: Sequence[str], line: int, column: int, units: Units) -> types.Position:
    """cg-lint's 1-based (line, column in characters) as an LSP position."""
    index = max(line - 1, 0)
    text = lines[index] if index < len(lines) else ""
    return types.Position(line=index, character=units(text[: max(column - 1, 0)]))


def finding_range(lines: Sequence[str], finding: Finding, units: Units) -> types.Range:
    """From the reported column to the end of the line's code (findings carry a start only)."""
    start = position(lines, finding.line, finding.column, units)
    if finding.end_line is not None and finding.end_column is not None:
        return types.Range(
            start=start, end=position(lines, finding.end_line, finding.end_column, units)
        )
    index = finding.line - 1
    text = lines[index] if 0 <= index < len(lines) else ""
    end = max(units(text.rstrip()), start.character + 1)
    return types.Range(start=start, end=types.Position(line=start.line, character=end))


def diagnostic(
    lines: Sequence[str], finding: Finding, units: Units, url_template: str | None = None
) -> types.Diagnostic:
    return types.Diagnostic(
        range=finding_range(lines, finding, units),
        message=finding.message,
        severity=types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=_code_description(finding.code, url_template),
        source=SOURCE,
    )


def _code_description(code: str, url_template: str | None) -> types.CodeDescription | None:
    url = rule_url(code, url_template)
    return types.CodeDescription(href=url) if url else None


def contains(rng: types.Range, pos: types.Position) -> bool:
    start, end = (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
    return start <= (pos.line, pos.character) <= end


def overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line,
        b.start.character,
    ) <= (a.end.line, a.end.character)


def _newline_of(text: str) -> str:
    match = _NEWLINE.search(text)
    return match.group() if match else "\n"


def text_edit(lines: Sequence[str], edit: Edit, units: Units, newline: str) -> types.TextEdit:
    return types.TextEdit(
        range=types.Range(
            start=position(lines, edit.start_line, edit.start_column, units),
            end=position(lines, edit.end_line, edit.end_column, units),
        ),
        new_text=_NEWLINE.sub(newline, edit.replacement),
    )


def fix_edits(text: str, lines: Sequence[str], fix: Fix, units: Units) -> list[types.TextEdit]:
    newline = _newline_of(text)
    return [text_edit(lines, e, units, newline) for e in fix.edits]


def noqa_edit(
    text: str, lines: Sequence[str], finding: Finding, units: Units
) -> types.TextEdit | None:
    """``# noqa: CODE`` on the reported line (added to the codes of a ``# noqa:`` already there);
    None when the comment cannot go there (a line continued by a backslash, inside a string)."""
    index = finding.line - 1
    if not 0 <= index < len(lines):
        return None
    line = lines[index]
    match = NOQA.search(line)
    if match is not None and not match.group("codes"):
        return None  # a bare noqa comment silences every code already
    if match is not None:
        codes = match.group("codes")
        column = match.start("codes") + len(codes.rstrip(", \t"))
        insert = f",{finding.code}"
    else:
        column = len(line.rstrip())
        insert = f"  # noqa: {finding.code}"
    new_line = line[:column] + insert + line[column:]
    new_lines = list(lines)
    new_lines[index] = new_line
    try:  # the comment must not change what the code means (a continuation, a string)
        ast.parse(_newline_of(text).join(new_lines))
    except (SyntaxError, ValueError):
        return None
    pos = types.Position(line=index, character=units(line[:column]))
    return types.TextEdit(range=types.Range(start=pos, end=pos), new_text=insert)


def minimal_edit(before: str, after: str, units: Units) -> types.TextEdit:
    """One edit turning ``before`` into ``after``, spanning only the lines that differ."""
    a, b = split_lines(before), split_lines(after)
    head = 0
    while head < min(len(a), len(b)) - 1 and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head - 1 and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    newline = _newline_of(after) if _NEWLINE.search(after) else _newline_of(before)
    old_end = len(a) - tail  # lines head..old_end-1 are replaced
    if tail:
        new_text = "".join(line + newline for line in b[head : len(b) - tail])
        end = types.Position(line=old_end, character=0)
    else:
        new_text = newline.join(b[head:])
        end = types.Position(line=len(a) - 1, character=units(a[-1]))
    return types.TextEdit(
        range=types.Range(start=types.Position(line=head, character=0), end=end), new_text=new_text
    )


def hover_markdown(codes: Iterable[str], url_template: str | None = None) -> str:
    from cg_lint.docs import page
    from cg_lint.rules import RULES_BY_CODE

    pages = []
    for code in dict.fromkeys(codes):
        rule = RULES_BY_CODE.get(code)
        if rule is not None:
            url = rule_url(code, url_template)
            pages.append(page(rule) + (f"\n[{code} rule page]({url})\n" if url else ""))
    return "\n---\n\n".join(pages)
