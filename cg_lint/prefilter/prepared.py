"""The one seam between the speed machinery and the analysis: a file, prepared for the index.

``prepare`` runs everything that exists only to make linting cheap, in order: the substring gate,
the ``ast`` gates and the reduction (``cg_lint.prefilter``), the removal of the empty lines the
reduction leaves (``compact``), and libcst's parse, whole or per top-level statement from a
``ChunkCache`` (``parse_cache``). What comes out is a ``Prepared``: the parsed module and where its
lines sit in the file (``Layout``), which ``cg_lint.syntax.index.FileIndex`` consumes. Nothing past
this point knows whether the text was reduced or the parse reused.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from cg_lint.findings import FileError
from cg_lint.prefilter import split_lines
from cg_lint.prefilter.lines import Layout
from cg_lint.prefilter.parse_cache import ChunkCache, parse_with_cache
from cg_lint.prefilter.planned import Planned, one_line, plan_file
from cg_lint.prefilter.reduce import TextMemo


@dataclass(frozen=True)
class Prepared:
    """``text``: the file as its author wrote it (decoded); ``module``: what libcst parsed (the
    whole text, or its reduction); ``layout``: where the parsed lines sit in the file, when known."""

    text: str
    module: cst.Module
    layout: Layout | None = None
    # parsed line -> characters removed from its start before parsing (cg_lint.prefilter.form_feeds)
    column_shifts: dict[int, int] = field(default_factory=dict, compare=False, hash=False)


def prepare(source: str | bytes, path: str, markers: tuple[str, ...], *, tree: ast.Module | None = None,
            gates: bool = True, reduce: bool = True, chunks: ChunkCache | None = None,
            memo: TextMemo | None = None, planned: Planned | None = None) -> Prepared | FileError | None:
    """The prepared file, the one error that stops it, or None when it cannot hold a custom gradient.

    ``tree``: the ``ast`` of the same text, when the caller has it (flake8). ``gates=False`` hands
    libcst the whole text of every substring candidate (the reference the gates are tested against);
    ``reduce=False`` runs the gates but parses the whole text. ``chunks``: parse per top-level
    statement, reusing those parsed before (editors re-lint on every save); ``memo``: the
    reduction's per-text facts, kept across calls. ``planned``: what ``plan_file`` already gave for
    this source with these arguments (the flake8 plugin plans before it imports libcst)."""
    if planned is None:
        found = plan_file(source, path, markers, tree=tree, gates=gates, reduce=reduce, memo=memo)
        if found is None or isinstance(found, FileError):
            return found
        planned = found
    parse_text, starts, line_map, shifts = planned.parse_text, planned.starts, planned.line_map, planned.shifts
    try:
        module = parse_with_cache(parse_text, starts, chunks) if chunks is not None and starts \
            else cst.parse_module(parse_text)
    except cst.ParserSyntaxError as e:
        message = re.sub(r"^(parser error: )?error at \d+:\d+: ", "", e.message)
        line = e.raw_line if line_map is None or not 0 < e.raw_line <= len(line_map) else line_map[e.raw_line - 1]
        return FileError(path, one_line(f"cannot parse: {message}"), line, e.raw_column + 1 + shifts.get(e.raw_line, 0))
    except RecursionError:
        return FileError(path, "cannot parse: nesting too deep")
    except Exception as e:  # libcst's native parser can fail in other ways; one line, never a traceback
        return FileError(path, one_line(f"cannot parse: libcst failed: {type(e).__name__}: {e}"))
    layout = Layout(starts, split_lines(parse_text), planned.members, line_map) if starts else None
    return Prepared(planned.text, module, layout, shifts)
