"""Everything ``prepare`` does before libcst, importable without libcst.

``plan_file`` runs the substring gate, the ``ast`` gates, the reduction, the compaction and the
form-feed normalisation, and says exactly what libcst will be given (``Planned``). The analysis is a
function of that text and its statement layout, plus the file's line of each parsed line
(``line_map``), which only moves positions: the flake8 plugin keys results on the first part
(``Planned.region``) so that an edit the reduction blanks reuses the previous result without
importing libcst (a fresh process on every save is how most editors run flake8).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from cg_lint.findings import FileError
from cg_lint.prefilter import compact, might_contain, plan
from cg_lint.prefilter.form_feeds import strip_form_feeds
from cg_lint.prefilter.reduce import TextMemo
from cg_lint.sources import decode


@dataclass(frozen=True)
class Planned:
    """``text``: the file as written (decoded); ``parse_text``: what libcst parses (reduced,
    compacted, form feeds out of indentation); ``starts``/``members``: statement layout in
    ``parse_text``'s numbering (None: parse it whole); ``line_map``: the file's line of each parsed
    line (None: the same); ``shifts``: characters removed per parsed line (form feeds)."""

    text: str
    parse_text: str
    starts: list[int] | None = None
    members: dict[int, list[int]] | None = None
    line_map: list[int] | None = None
    shifts: dict[int, int] = field(default_factory=dict)

    def region(self) -> bytes:
        """What findings depend on, apart from where the parsed lines sit in the file."""
        members = sorted((k, tuple(v)) for k, v in (self.members or {}).items())
        head = repr((self.starts, members, sorted(self.shifts.items())))
        return head.encode() + b"\0" + self.parse_text.encode("utf-8", "surrogatepass")


def plan_file(source: str | bytes, path: str, markers: tuple[str, ...], *, tree: ast.Module | None = None,
              gates: bool = True, reduce: bool = True, memo: TextMemo | None = None) -> Planned | FileError | None:
    """What libcst is to parse, the one error that stops the file, or None when it cannot hold a
    custom gradient (see ``cg_lint.prefilter.prepared.prepare`` for the arguments)."""
    if not might_contain(source, markers):
        return None
    if isinstance(source, bytes):
        text = decode(source, path)
        if isinstance(text, FileError):
            return text
    else:
        text = source
    parse_text, starts, members = text, None, None
    line_map: list[int] | None = None  # the original line of each parsed line, when empty ones were dropped
    if gates:
        try:
            found = plan(text, markers, tree, reduce=reduce, memo=memo)
        except Exception as e:  # never a traceback: the run goes on, the file is reported
            return FileError(path, one_line(f"internal error: {type(e).__name__}: {e} (please report this)"))
        if found.skip:
            return None
        if found.error is not None:
            message, line, column = found.error
            return FileError(path, one_line(message), line, column)
        parse_text, starts, members = found.text, found.starts, found.members
        if starts is not None and reduce:
            compacted = compact(parse_text, starts, members)
            if compacted is not None:
                parse_text, line_map, starts, members = compacted
    # libcst mishandles form feeds in indentation (cg_lint.prefilter.form_feeds): parse without them
    parse_text, shifts = strip_form_feeds(parse_text)
    return Planned(text, parse_text, starts, members, line_map, shifts)


def one_line(message: str) -> str:
    return " ".join(message.split()) if "\n" in message or "\r" in message else message
