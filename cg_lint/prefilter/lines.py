"""Line bookkeeping shared by the prefilter: lines as Python's tokenizer sees them, statement spans."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split the way Python's tokenizer does (not on form feeds etc.)."""
    return _LINE.findall(text)


@dataclass(frozen=True)
class Layout:
    """Where the text libcst parsed sits in the file, so positions can be computed per statement.

    ``statement_starts``: first line of each top-level statement (``a = 1; b = 2`` is one);
    ``source_lines``: the parsed text split with its line endings; ``member_starts``: first lines of
    the body statements of top-level classes, by the class's first line; ``line_map``: the file's
    line of each parsed line, when empty lines were dropped before parsing.
    """

    statement_starts: list[int]
    source_lines: list[str]
    member_starts: dict[int, list[int]] | None = None
    line_map: list[int] | None = None


class Lines:
    """Map character offsets to 1-based line numbers, and lines to offsets (``starts``)."""

    def __init__(self, lines: list[str]) -> None:
        self.starts = [0]
        for line in lines:
            self.starts.append(self.starts[-1] + len(line))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def end_of(self, line: int) -> int:
        """Offset just past ``line`` (clamped to the text)."""
        return self.starts[min(line, len(self.starts) - 1)]


def word_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """Any of ``words`` as a whole identifier (not part of a longer one)."""
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(words))) + r")(?!\w)")


def first_line(stmt: ast.AST) -> int:
    """A statement's first line: its first decorator's for a decorated def or class."""
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        return min(stmt.lineno, *(d.lineno for d in decorators))
    return stmt.lineno


def touches(node: ast.AST, lines: list[int]) -> bool:
    """Whether ``node`` spans one of the sorted ``lines`` (nodes without a position always do)."""
    start = getattr(node, "lineno", None)
    if start is None:
        return True  # arguments, comprehension, withitem...: no position, always look inside
    end = getattr(node, "end_lineno", None) or start
    start = first_line(node)
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end


def groups(body: list[ast.stmt]) -> tuple[list[list[ast.stmt]], list[tuple[int, int]]]:
    """Statements that share a line (`a = 1; b = 2`) form one group: kept or blanked together."""
    out: list[list[ast.stmt]] = []
    spans: list[tuple[int, int]] = []
    for stmt in body:
        first, last = first_line(stmt), stmt.end_lineno or stmt.lineno
        if spans and first <= spans[-1][1]:
            out[-1].append(stmt)
            spans[-1] = (spans[-1][0], max(spans[-1][1], last))
        else:
            out.append([stmt])
            spans.append((first, last))
    return out, spans


def starts_line(stmt: ast.stmt, lines: list[str]) -> bool:
    """Whether nothing but indentation precedes ``stmt`` (or its first decorator) on its line."""
    number = first_line(stmt)
    line = lines[number - 1] if number <= len(lines) else ""
    if getattr(stmt, "decorator_list", None):
        return line.lstrip().startswith("@")
    return not line.encode("utf-8", "surrogatepass")[:stmt.col_offset].strip()


def compact(text: str, starts: list[int], members: dict[int, list[int]] | None
            ) -> tuple[str, list[int], list[int], dict[int, list[int]] | None] | None:
    """Drop empty lines (the reduction leaves thousands): libcst's parse time grows with them.

    Returns the text, the original line of each of its lines, and ``starts`` and ``members`` in the
    new numbering; None when there is nothing to drop. Only lines holding nothing but a line ending
    go (inside a triple-quoted string that shortens the string, which no rule reads); every other
    line is kept whole, so columns stay as they were.
    """
    lines = split_lines(text)
    kept = [i for i, line in enumerate(lines, 1) if line not in ("\n", "\r\n", "\r")]
    if len(kept) == len(lines):
        return None
    new = {old: n for n, old in enumerate(kept, 1)}
    starts_new = [new[s] for s in starts if s in new]
    if len(starts_new) != len(starts):
        return None  # a statement starting on an empty line: cannot happen; keep the text as it is
    members_new = None
    if members is not None:
        members_new = {new[k]: [new[m] for m in v if m in new] for k, v in members.items() if k in new}
    return "".join(lines[i - 1] for i in kept), kept, starts_new, members_new
