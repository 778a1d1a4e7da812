"""Node positions, identical to libcst's ``PositionProvider``, about 3x cheaper.

``MetadataWrapper.resolve(PositionProvider)`` regenerates the code and records a range per node
through a ``contextlib`` generator and ``CodePosition`` objects; that bookkeeping, not the codegen,
is most of its cost. This state does the same walk with a slotted context object and plain tuples.
``tests/test_prefilter.py`` checks that both agree on every node of real files.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

_NEWLINE = re.compile(r"\r\n?|\n")  # what libcst's position provider splits tokens on
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

Range = tuple[int, int, int, int]  # start line (1-based), start column (0-based), end line, end column


class _Record:
    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state: _PositionState, node: cst.CSTNode, start_node: Any, end_node: Any) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.line, self.column = state.line, state.column

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        state = self.state
        ranges = state.ranges
        start = (self.line, self.column) if self.start_node is None else ranges[id(self.start_node)][:2]
        end = (state.line, state.column) if self.end_node is None else ranges[id(self.end_node)][2:]
        ranges[id(self.node)] = (*start, *end)


class _PositionState(CodegenState):
    """Syntactic ranges where a node records one, else the whitespace-inclusive range (as libcst)."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.stack: list[tuple[int, int]] = []
        self.ranges: dict[int, Range] = {}

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.column += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if id(node) not in self.ranges:
            self.ranges[id(node)] = (*start, self.line, self.column)

    def record_syntactic_position(  # type: ignore[override]  # libcst's is a generator context manager
            self, node: cst.CSTNode, *, start_node: Any = None, end_node: Any = None) -> _Record:
        return _Record(self, node, start_node, end_node)


def compute_ranges(module: cst.Module) -> dict[int, Range]:
    """Ranges by ``id(node)``; the module must stay alive while they are used."""
    state = _PositionState(module)
    module._codegen(state)
    return state.ranges


# A piece's code and ranges (lines counted from the piece's first line) depend only on the piece and
# the indentation and newline it is rendered with. Editors re-lint mostly unchanged statements, and
# the parse cache returns the same node objects for them, so pieces are kept, with their nodes (ids
# stay unique), in the owner's NodeMemo (cg_lint.syntax.walk), up to its bound.
Pieces = dict[tuple[int, str, str, "str | None"], tuple[cst.CSTNode, str, dict[int, Range]]]


def _piece(node: cst.CSTNode, module: cst.Module, indent: str | None, kept: Pieces
           ) -> tuple[str, dict[int, Range]]:
    """The code of a top-level statement (``indent`` None) or of a class member, and its ranges."""
    key = (id(node), module.default_indent, module.default_newline, indent)
    hit = kept.get(key)
    if hit is not None and hit[0] is node:
        return hit[1], hit[2]
    state = _PositionState(module)
    if indent is None:
        alone = module.with_changes(body=[node], header=(), footer=())
        alone._codegen(state)
        del state.ranges[id(alone)]  # a temporary: its id may be reused by a later node
    else:
        state.increase_indent(indent)
        node._codegen(state)
    code = "".join(state.tokens)
    kept[key] = (node, code, state.ranges)
    return code, state.ranges


class LazyRanges:
    """Ranges computed one top-level statement (or one member of a top-level class) at a time.

    Rules usually ask for a few positions (findings, a call site); regenerating the whole module for
    them costs as much as a third of a clean file's analysis. ``starts`` gives the first line of each
    top-level statement and ``members`` those of the body statements of top-level classes (keyed by
    the class's first line), both from the ``ast``; a piece's ranges come from regenerating it alone
    and shifting lines. The regenerated text is compared with the source at the computed place, and
    any disagreement falls back to a larger piece, so the answer is always libcst's.
    """

    def __init__(self, module: cst.Module, starts: list[int] | None, source_lines: list[str] | None,
                 members: dict[int, list[int]] | None = None, pieces: Pieces | None = None) -> None:
        self.module = module
        self.pieces: Pieces = {} if pieces is None else pieces
        self.usable = starts is not None and source_lines is not None and len(starts) == len(module.body)
        self.starts = starts or []
        self.lines = source_lines or []
        self.members = members or {}
        self.index = {id(stmt): i for i, stmt in enumerate(module.body)} if self.usable else {}
        self.done: set[int] = set()
        self.ranges: dict[int, Range] = {}
        self.full = False

    def get(self, node: cst.CSTNode, top: cst.CSTNode | None, member: cst.CSTNode | None = None) -> Range | None:
        key = id(node)
        if key in self.ranges or self.full:
            return self.ranges.get(key)
        i = self.index.get(id(top)) if top is not None else None
        if i is not None and member is not None and id(member) not in self.done and self._member(i, member):
            return self.ranges.get(key)
        if i is None or i in self.done or not self._statement(i):
            self._whole()
        return self.ranges.get(key)

    def _statement(self, i: int) -> bool:
        stmt = self.module.body[i]
        code, ranges = _piece(stmt, self.module, None, self.pieces)
        if not self._place(code, ranges, self.starts[i] - 1 - len(stmt.leading_lines)):
            return False
        self.done.add(i)
        return True

    def _member(self, i: int, member: cst.CSTNode) -> bool:
        cls = self.module.body[i]
        block = getattr(cls, "body", None)
        if type(cls) is not cst.ClassDef or type(block) is not cst.IndentedBlock:
            return False
        # members the reduction blanked are not in the tree: keep the lines that still hold code
        lines = [n for n in self.members.get(self.starts[i], ())
                 if 0 < n <= len(self.lines) and self.lines[n - 1].strip()]
        if len(lines) != len(block.body):
            return False
        j = next((k for k, m in enumerate(block.body) if m is member), None)
        if j is None:
            return False
        indent = self.module.default_indent if block.indent is None else block.indent
        code, ranges = _piece(member, self.module, indent, self.pieces)
        if not self._place(code, ranges, lines[j] - 1 - len(getattr(member, "leading_lines", ()))):
            return False
        self.done.add(id(member))
        return True

    def _place(self, code: str, ranges: dict[int, Range], offset: int) -> bool:
        """Shift a piece's ranges by ``offset`` lines if its text is really there."""
        n = len(_LINES.findall(code))
        if offset < 0 or "".join(self.lines[offset:offset + n]).rstrip("\r\n") != code.rstrip("\r\n"):
            return False
        for key, (l1, c1, l2, c2) in ranges.items():
            self.ranges[key] = (l1 + offset, c1, l2 + offset, c2)
        return True

    def _whole(self) -> None:
        self.ranges = compute_ranges(self.module)
        self.full = True
