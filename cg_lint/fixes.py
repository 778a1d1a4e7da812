"""Apply the ``Fix``es that rules attach to findings, the way ``ruff --fix`` does.

A rule offers a fix by passing ``fix=Fix(title, (Edit(...),), safe=...)`` to ``Rule.finding``
(and setting ``fixable = True``; ``cg_lint.rules.edits`` builds the edits); nothing here knows
about individual rules. :func:`fix_source`
lints, applies every applicable non-overlapping fix, re-lints and repeats until no applicable fix
is left (fixes that overlapped one applied in the same pass get their turn in the next pass).

Positions are libcst's: 1-based lines, 1-based columns counted in characters, end exclusive.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cg_lint.engine import lint_source
from cg_lint.findings import FileError, Finding, Fix
from cg_lint.sources import decode

MAX_ITERATIONS = 10
# libcst ends lines at \r\n, \r or \n only (str.splitlines also splits at \f, \x1c, \u2028, ...)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# --- applying edits to text ------------------------------------------------------------------

def applicable(findings: Iterable[Finding], unsafe: bool = False) -> list[Finding]:
    """Findings whose fix runs under the current setting (safe only, or unsafe too)."""
    return [f for f in findings if f.fix is not None and (f.fix.safe or unsafe)]


def newline_of(text: str) -> str:
    """The file's newline style: that of its first line break (Python's own rule for mixed files)."""
    match = _NEWLINE.search(text)
    return match.group() if match else "\n"


class _Offsets:
    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.length = len(text)

    def offset(self, line: int, column: int) -> int | None:
        if not 1 <= line <= len(self.starts) or column < 1:
            return None
        end = self.starts[line] if line < len(self.starts) else self.length
        offset = self.starts[line - 1] + column - 1
        return offset if offset <= end else None


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (s1, e1), (s2, e2) = a, b
    # same start (two insertions, or an insertion before a replacement) or any shared character;
    # an insertion strictly inside a replaced range conflicts too
    return s1 == s2 or (s1 < e2 and s2 < e1) or s1 < s2 < e1 or s2 < s1 < e2


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, list[Fix], list[Fix]]:
    """Apply every fix none of whose edits overlaps an edit already taken.

    Returns ``(new_text, applied, skipped)``; fixes are considered in source order and a fix is
    all-or-nothing. Replacement newlines follow the file's style.
    """
    offsets = _Offsets(text)
    newline = newline_of(text)
    taken: list[tuple[int, int, str]] = []
    applied: list[Fix] = []
    skipped: list[Fix] = []

    def spans(fix: Fix) -> list[tuple[int, int, str]] | None:
        out = []
        for e in fix.edits:
            start, end = offsets.offset(e.start_line, e.start_column), offsets.offset(e.end_line, e.end_column)
            if start is None or end is None or end < start:
                return None
            out.append((start, end, _NEWLINE.sub(newline, e.replacement)))
        return out

    def first(fix: Fix) -> tuple[int, int]:
        return min(((e.start_line, e.start_column) for e in fix.edits), default=(0, 0))

    for fix in sorted(fixes, key=first):
        mine = spans(fix)
        if not mine or any(_conflict(m[:2], t[:2]) for m in mine for t in taken) \
                or any(_conflict(a[:2], b[:2]) for i, a in enumerate(mine) for b in mine[i + 1:]):
            skipped.append(fix)
            continue
        taken.extend(mine)
        applied.append(fix)
    for start, end, replacement in sorted(taken, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, applied, skipped


# --- the fix loop ----------------------------------------------------------------------------

@dataclass
class FixOutcome:
    """What fixing one source did. ``text`` is the fixed source (the input when nothing applied)."""

    path: str
    original: str
    text: str
    fixed: int = 0
    remaining: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    converged: bool = True

    @property
    def changed(self) -> bool:
        return self.text != self.original


def fix_source(text: str, path: str, settings=None, unsafe: bool = False, apply_noqa: bool = True,
               max_iterations: int = MAX_ITERATIONS) -> FixOutcome:
    """Lint, fix, re-lint until no applicable fix is left. Never returns text that fails to parse."""
    outcome = FixOutcome(path, text, text)
    result = lint_source(text, path, settings, apply_noqa=apply_noqa)
    if result.error is not None:
        outcome.error = result.error
        return outcome
    for _ in range(max_iterations):
        todo = applicable(result.findings, unsafe)
        if not todo:
            break
        new, applied, _skipped = apply_fixes(outcome.text, [f.fix for f in todo if f.fix])
        if not applied or new == outcome.text:
            break
        again = lint_source(new, path, settings, apply_noqa=apply_noqa)
        if again.error is not None:
            # a fix that breaks the file is a bug in the fix: keep the last good text and say so
            outcome.error = FileError(path, f"a fix produced invalid code ({again.error.message}); "
                                            "the remaining fixes were not applied (please report this)")
            break
        outcome.text, outcome.fixed, result = new, outcome.fixed + len(applied), again
    else:
        outcome.converged = not applicable(result.findings, unsafe)
    outcome.remaining = result.findings
    return outcome


# --- reading and writing files as they were --------------------------------------------------

@dataclass(frozen=True)
class SourceFile:
    text: str
    encoding: str  # "utf-8-sig" when the file starts with a BOM


def read_source(data: bytes, path: str) -> SourceFile | FileError:
    """Decode like Python does, remembering the encoding (and BOM) to write the file back."""
    text = decode(data, path)
    if isinstance(text, FileError):
        return text
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return SourceFile(text, encoding)


def encode_source(text: str, encoding: str) -> bytes:
    """Newlines are kept as they are in ``text`` (never translated)."""
    return text.encode(encoding)


def unified_diff(path: str, before: str, after: str) -> str:
    a, b = _LINE.findall(before), _LINE.findall(after)
    lines = []
    for line in difflib.unified_diff(a, b, fromfile=path, tofile=path):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)
