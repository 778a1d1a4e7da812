"""CPython's ``ast`` of a document after an edit, re-parsing only the statements the edit touched.

The prefilter needs the ``ast`` of the whole text (which names are used, what to keep), and on a
2,000-line file ``ast.parse`` costs ~20 ms: half of what a warm lint costs otherwise. An edit
changes a few lines; the top-level statements wholly before them are the same text at the same
lines, and so are those wholly after them when the edit kept the number of lines. Only the lines
from the first touched statement to the last are parsed again, preceded by as many empty lines as
come before them, so that CPython numbers them exactly as in the whole text.

The result is the tree ``ast.parse`` gives for the whole text (``tests/test_server_incremental.py``
compares them, positions included, over thousands of random edits). Whenever that cannot be known
the whole text is parsed: when the re-parsed lines do not parse alone (an edit that opens a bracket
or a string continued below, an indented line that would join the statement above, ...), when the
edit changed the number of lines (the statements below moved: they are re-parsed too), and when
there is no earlier tree. A text that does not parse gives None; the engine then reports the error
from its own parse.
"""

from __future__ import annotations

import ast
import re
import warnings

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # CPython's line ends


def _parse(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc.: the engine's concern
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno, *(d.lineno for d in decorators)]) if decorators else stmt.lineno


class IncrementalAst:
    """The last text of one document, its lines and its tree."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tree: ast.Module | None = None
        self.reparsed_lines = (
            0  # how many lines the last call parsed (what the tests and bench see)
        )

    def parse(self, text: str) -> ast.Module | None:
        lines = _LINE.findall(text)
        tree = self._incremental(lines)
        if tree is None:
            tree = _parse(text)
            self.reparsed_lines = len(lines)
        self.lines, self.tree = lines, tree
        return tree

    def _incremental(self, lines: list[str]) -> ast.Module | None:
        old, tree = self.lines, self.tree
        if tree is None or not old:
            return None
        if lines == old:
            self.reparsed_lines = 0
            return tree
        shortest = min(len(old), len(lines))
        head = 0
        while head < shortest and old[head] == lines[head]:
            head += 1
        tail = 0
        while tail < shortest - head and old[-1 - tail] == lines[-1 - tail]:
            tail += 1
        same_count = len(lines) == len(old)
        # changed: lines head+1 .. last (1-based), in both texts when the count is the same
        first, last = head + 1, (len(lines) - tail if same_count else len(lines))
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        for stmt in tree.body:
            start, end = _first_line(stmt), stmt.end_lineno or stmt.lineno
            if end < first:
                before.append(stmt)
            elif same_count and start > last:
                after.append(stmt)
            else:  # touched: re-parsed with the changed lines
                first, last = min(first, start), max(last, end)
        if not same_count:
            last = len(lines)
        chunk = _parse("\n" * (first - 1) + "".join(lines[first - 1 : last]))
        if chunk is None:
            return None
        if after and chunk.body and (chunk.body[-1].end_lineno or 0) >= _first_line(after[0]):
            return None  # cannot happen when the chunk parsed alone; kept as a guard
        self.reparsed_lines = last - first + 1
        return ast.Module(body=[*before, *chunk.body, *after], type_ignores=[])
