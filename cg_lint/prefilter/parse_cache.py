"""Parse a module one top-level statement at a time, reusing statements parsed before.

An editor re-lints a file on every save (the flake8 plugin runs inside the language server, so this
module's state survives between saves) and most top-level statements are unchanged between saves.
The text is cut at the first line of each top-level statement (``Plan.starts``), each piece is
parsed alone (or found in a bounded LRU cache keyed by its text), and the pieces are assembled into
the module ``cst.parse_module`` gives for the whole text: same code, same tree.

A piece is parsed followed by a sentinel statement, as in the file it is followed by the next one:
libcst decides which trailing lines belong to a block (indented further) and which lead the next
statement by what follows them, and at the end of its input it even drops some whitespace-only
lines. The sentinel's leading lines then become the next statement's. The last piece ends the file
and is parsed as it is.

A piece is only exact when libcst infers the same defaults from it as from the whole file:
``IndentedBlock.indent`` / ``Match.indent`` and ``Newline.value`` are None when they equal the
module's default indent (its first INDENT token) and default newline (its first newline). Pieces
that disagree (mixed indentation or newlines), pieces libcst rejects, and cuts that do not give one
statement per piece fall back to parsing the whole text, so errors are always the whole parse's.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import libcst as cst

from cg_lint.prefilter.lines import split_lines

__all__ = ["MAX_CHARS", "ChunkCache", "parse_by_statement", "parse_with_cache"]

# Measured with tracemalloc (python 3.11, libcst 1.9): the generated 2,000-line custom-gradient file
# (bench/gen_cg.py, 35,640 characters of dense code) costs 2.1 MB cached, 59 bytes per character;
# real TensorFlow sources (docstrings, comments) cost about 25. 1,000,000 characters (some 28 such
# files; the prefilter hands over far less of real ones) stay under about 60 MB even for dense code.
MAX_CHARS = 1_000_000
# An edit makes a new piece of each statement it touched and leaves the old one unused: pieces no
# parse used in this many parses are dropped, so an editor's process keeps what its recent files
# are made of (and a few undos), not every version of every edited statement until MAX_CHARS.
IDLE_PARSES = 32

_NEWLINE = re.compile(r"\r\n?|\n")  # how libcst finds a module's default newline


class _Chunk:
    """One piece parsed alone: its statement and what the assembly needs to know about it."""

    __slots__ = ("stmt", "header", "trailing", "footer", "encoding", "default_indent", "default_newline",
                 "block_indent", "newline", "has_trailing_newline", "joined", "used")

    def __init__(self, piece: str, module: cst.Module, last: bool) -> None:
        self.stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement = module.body[0]
        self.header = tuple(module.header)
        # lines after the statement: they lead the next statement (the sentinel here) or end the file
        self.trailing = () if last else tuple(module.body[1].leading_lines)
        self.footer = tuple(module.footer)
        self.encoding = module.encoding
        self.default_indent = module.default_indent
        self.default_newline = module.default_newline
        # the indent this piece's blocks mean by None: only when it has one (else libcst's fallback)
        self.block_indent = module.default_indent if _has_block(self.stmt) else None
        # the newline this piece's newlines mean by None: only when it has one
        self.newline = module.default_newline if "\n" in piece or "\r" in piece else None
        self.has_trailing_newline = module.has_trailing_newline
        # (leading lines moved in, the statement with them): the last assembly's, reused when the
        # same lines (the same objects, from the same cached previous piece) come first again
        self.joined: tuple[tuple[cst.EmptyLine, ...], cst.SimpleStatementLine | cst.BaseCompoundStatement] | None = None
        self.used = 0  # the last parse that used it (ChunkCache.parses)

    def with_leading(self, extra: tuple[cst.EmptyLine, ...]) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
        if not extra:
            return self.stmt
        joined = self.joined  # one read: another thread may replace it
        # the same line objects: a tuple with a header is built anew for each assembly, and a new
        # statement each time would be new nodes to walk (and keep) on every lint
        if joined is not None and (joined[0] is extra or len(joined[0]) == len(extra)
                                   and all(a is b for a, b in zip(joined[0], extra))):
            return joined[1]
        stmt = self.stmt.with_changes(leading_lines=(*extra, *self.stmt.leading_lines))
        self.joined = (extra, stmt)
        return stmt


class ChunkCache:
    """LRU of parsed pieces by (text, ends the file), bounded by the total length of those texts
    and by age: a piece no parse used in the last ``idle`` parses is dropped.

    Its owner decides how long it lives (``cg_lint.engine.Caches``): an editor's process keeps one
    across saves."""

    def __init__(self, limit: int = MAX_CHARS, idle: int = IDLE_PARSES) -> None:
        self.limit, self.idle = limit, idle
        self.chars = 0
        self.parses = 0  # how many times ``start`` ran: one per parse
        self._items: OrderedDict[tuple[str, bool], _Chunk] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def start(self) -> None:
        """A parse begins: forget the pieces of the oldest parses (the least recently used come
        first, so this stops at the first piece still in use)."""
        with self._lock:
            self.parses += 1
            oldest, items = self.parses - self.idle, self._items
            while items:
                key, chunk = next(iter(items.items()))
                if chunk.used >= oldest:
                    break
                del items[key]
                self.chars -= len(key[0])

    def get(self, key: tuple[str, bool]) -> _Chunk | None:
        with self._lock:
            chunk = self._items.get(key)
            if chunk is not None:
                self._items.move_to_end(key)
                chunk.used = self.parses
            return chunk

    def put(self, key: tuple[str, bool], chunk: _Chunk) -> None:
        with self._lock:
            if len(key[0]) > self.limit or key in self._items:
                return
            chunk.used = self.parses
            self._items[key] = chunk
            self.chars += len(key[0])
            while self.chars > self.limit:
                (old, _), _ = self._items.popitem(last=False)
                self.chars -= len(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.chars = 0


# follows every piece but the last, as the next statement does in the file; a statement of its own
# unless the piece ends in a backslash continuation, and then the count check falls back
_SENTINEL = "pass\n"


def parse_with_cache(text: str, starts: Sequence[int] | None, cache: ChunkCache) -> cst.Module:
    """``cst.parse_module(text)``, from cached pieces where the text is unchanged.

    ``starts``: the 1-based first line of each top-level statement as libcst groups them
    (decorators included, one entry for `a = 1; b = 2`), as ``Plan.starts`` gives them.
    """
    module = parse_by_statement(text, starts, cache)
    return module if module is not None else cst.parse_module(text)


def parse_by_statement(text: str, starts: Sequence[int] | None, cache: ChunkCache) -> cst.Module | None:
    """The module assembled from (cached) pieces, or None where only the whole parse is exact."""
    pieces = _cut(text, starts)
    chunks = _parse_pieces(pieces, cache) if pieces is not None else None
    return _assemble(chunks, text) if chunks is not None else None


def _cut(text: str, starts: Sequence[int] | None) -> list[str] | None:
    """The text of each top-level statement, from its first line to the next one's."""
    if not starts:
        return None
    lines = split_lines(text)
    if starts[0] < 1 or starts[-1] > len(lines) or any(a >= b for a, b in zip(starts, starts[1:])):
        return None
    bounds = [0, *(s - 1 for s in starts[1:]), len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


def _parse_pieces(pieces: list[str], cache: ChunkCache) -> list[_Chunk] | None:
    cache.start()
    chunks: list[_Chunk] = []
    used: set[int] = set()
    for i, piece in enumerate(pieces):
        key = (piece, i == len(pieces) - 1)
        chunk = cache.get(key)
        if chunk is None or id(chunk) in used:
            # a piece seen twice in one file gets its own nodes: node identity must stay unique
            # within a module (parent maps and positions are keyed by it)
            fresh = _parse_piece(*key)
            if fresh is None:
                return None
            if chunk is None:
                cache.put(key, fresh)
            chunk = fresh
        used.add(id(chunk))
        chunks.append(chunk)
    return chunks


def _parse_piece(piece: str, last: bool) -> _Chunk | None:
    try:
        module = cst.parse_module(piece if last else piece + _SENTINEL)
    except Exception:  # the whole parse reports it, with the whole file's line numbers
        return None
    if len(module.body) != (1 if last else 2):
        return None
    return _Chunk(piece, module, last)


def _assemble(chunks: list[_Chunk], text: str) -> cst.Module | None:
    """The module of the whole text, or None when a piece's defaults differ from the file's."""
    found = _NEWLINE.search(text)
    newline = found.group(0) if found else None
    indent: str | None = None
    for chunk in chunks:
        if chunk.newline is not None and chunk.newline != newline:
            return None
        if chunk.block_indent is not None:
            if indent is None:
                indent = chunk.block_indent  # the file's first INDENT token is in this piece
            elif chunk.block_indent != indent:
                return None
    first, last = chunks[0], chunks[-1]
    body = [first.stmt]
    for prev, chunk in zip(chunks, chunks[1:]):
        extra = (*prev.trailing, *chunk.header) if chunk.header else prev.trailing
        body.append(chunk.with_leading(extra))
    return cst.Module(body=body, header=first.header, footer=last.footer, encoding=first.encoding,
                      default_indent=indent if indent is not None else first.default_indent,
                      default_newline=first.default_newline, has_trailing_newline=last.has_trailing_newline)


def _has_block(stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> bool:
    """Whether a top-level statement holds an INDENT token: an indented suite or a ``match``.

    A one-line suite (`if x: pass`) holds only simple statements, so the top level's suites decide.
    """
    if isinstance(stmt, cst.SimpleStatementLine):
        return False
    if isinstance(stmt, cst.Match):
        return True
    return any(isinstance(suite, cst.IndentedBlock) for suite in _suites(stmt))


def _suites(stmt: cst.BaseCompoundStatement) -> list[cst.BaseSuite]:
    suites = [stmt.body]
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:  # elif chains nest If nodes; Else ends them
        suites.append(orelse.body)
        orelse = getattr(orelse, "orelse", None)
    suites.extend(handler.body for handler in getattr(stmt, "handlers", ()))
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        suites.append(final.body)
    return suites
