"""Decide cheaply which files (and which parts of them) the libcst model has to see.

Parsing with libcst is ~10x slower than CPython's ``ast``, so a candidate goes through three gates:

1. **Substring** (``might_contain``): the file mentions a marker (``custom_gradient`` or the last
   component of a configured decorator name) somewhere, even inside a longer word or a comment.
2. **Use** (``plan``): on the ``ast``, a marker, or a name an import binds to one (``custom_gradient
   as cg``), is *used*: a Name or an attribute's last part, read (Load), and not itself the base of
   an attribute (``custom_gradient.generate_name()`` names the module). Decorators and calls are uses,
   and so is any other read (``cg = tf.custom_gradient``), to stay conservative. Occurrences only in
   imports, ``def``/parameter/keyword names, assignment targets, longer identifiers, strings or
   comments cannot make a definition, so such files are skipped.
3. **Reduction**: top-level statements the model cannot need are blanked line for line, so every
   line and column of what is left stays the same. Kept: statements mentioning a marker or alias
   ("roots"); every statement that mentions a name bound by a root, or a module-level def a root
   mentions (call sites of the custom-gradient functions); and, to a fixpoint, every statement that
   binds a name any kept statement mentions (imports, helpers, constants, rebinding of those names).
   Mentions are over-approximated (every word of the statement's text, strings and comments
   included); bindings are collected from the ``ast``.

Anything unexpected (``ast`` cannot parse the text, a null byte...) keeps the full text: the libcst
parse then reports the problem. The exactness of gates 2 and 3 against the full model is a test
(``tests/test_prefilter.py``). Known limit of gate 1: an identifier written with compatibility
characters (``ｃustom_gradient``, equal after NFKC) is not matched, and libcst does not resolve it
either.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

MARKER = "custom_gradient"
_WORD = re.compile(r"\w+")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORT = (ast.Import, ast.ImportFrom)


def markers(decorators: Iterable[str] = ()) -> tuple[str, ...]:
    """Substrings a file holding a custom gradient must contain."""
    return (MARKER, *sorted({d.rsplit(".", 1)[-1] for d in decorators} - {MARKER}))


def might_contain(data: bytes | str, names: tuple[str, ...]) -> bool:
    if isinstance(data, str):
        return any(m in data for m in names)
    return any(m.encode() in data for m in names)


@dataclass
class Plan:
    """What to hand to libcst: ``text`` (reduced or whole), or nothing when ``skip``."""

    skip: bool
    text: str
    kept: int = 0  # top-level statements kept (for benchmarks and tests)
    total: int = 0
    # first line of each top-level statement of ``text`` as libcst will see them (a line holding
    # `a = 1; b = 2` is one); lets positions be computed one statement at a time
    starts: list[int] | None = None


def plan(text: str, names: tuple[str, ...], tree: ast.Module | None = None, reduce: bool = True) -> Plan:
    """Gates 2 and 3 for one decoded source; ``tree`` may be passed when the caller has it (flake8)."""
    if tree is None:
        tree = parse_ast(text)
        if tree is None:
            return Plan(False, text)
    try:
        return _plan(text, names, tree, reduce)
    except (RecursionError, MemoryError):
        return Plan(False, text)


def parse_ast(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc.: not ours to report
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split the way Python's tokenizer does (not on form feeds etc.)."""
    return _LINE.findall(text)


class _Lines:
    """Map character offsets to 1-based line numbers."""

    def __init__(self, lines: list[str]) -> None:
        self.starts = [0]
        for line in lines:
            self.starts.append(self.starts[-1] + len(line))

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def _occurrence_lines(text: str, words: set[str], lines: _Lines) -> list[int]:
    if not words:
        return []
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, sorted(words))) + r")(?!\w)")
    return sorted({lines.line_of(m.start()) for m in pattern.finditer(text)})


def _touches(node: ast.AST, occ: list[int]) -> bool:
    start = getattr(node, "lineno", None)
    if start is None:
        return True  # arguments, comprehension, withitem...: no position, always look inside
    end = getattr(node, "end_lineno", None) or start
    decorators = getattr(node, "decorator_list", None)
    if decorators:  # a def's lineno is its `def` line, below its decorators
        start = min(start, *(d.lineno for d in decorators))
    i = bisect.bisect_left(occ, start)
    return i < len(occ) and occ[i] <= end


def _scan(roots: list[ast.AST], occ: list[int], words: set[str], aliases: set[str] | None) -> bool:
    """True if a word in ``words`` is used (see module doc) on one of the ``occ`` lines.

    Collects into ``aliases`` the names imports bind to one of ``words`` (``import ... as``).
    """
    used = False
    stack: list[tuple[ast.AST, bool, bool]] = [(r, False, False) for r in roots]
    while stack:
        node, is_base, everything = stack.pop()
        if isinstance(node, ast.Name):
            if node.id in words and not is_base and isinstance(node.ctx, ast.Load):
                used = True
            continue
        if isinstance(node, ast.Attribute):
            if node.attr in words and not is_base and isinstance(node.ctx, ast.Load):
                used = True
            stack.append((node.value, True, everything))
            continue
        if isinstance(node, ast.alias):
            if aliases is not None and node.asname and node.name.rsplit(".", 1)[-1] in words:
                aliases.add(node.asname)
            continue
        # f-string parts had unreliable positions before 3.12: never prune inside them
        everything = everything or isinstance(node, ast.JoinedStr)
        for child in ast.iter_child_nodes(node):
            if everything or _touches(child, occ):
                stack.append((child, False, everything))
    return used


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        return min(stmt.lineno, *(d.lineno for d in decorators))
    return stmt.lineno


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module (over-approximated)."""
    if isinstance(stmt, _DEF):
        return {stmt.name}
    out: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                out.add(node.id)
            continue
        if isinstance(node, _DEF):
            out.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.alias):
            out.add(node.asname or node.name.split(".")[0])
            continue
        for attr in ("name", "rest"):  # except-as, match patterns
            value = getattr(node, attr, None)
            if isinstance(value, str):
                out.add(value)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _plan(text: str, names: tuple[str, ...], tree: ast.Module, reduce: bool) -> Plan:
    lines = split_lines(text)
    offsets = _Lines(lines)
    body = tree.body
    words = set(names)
    occ = _occurrence_lines(text, words, offsets)
    aliases: set[str] = set()
    touched = [s for s in body if _touches_span(s, occ)]
    used = _scan(touched, occ, words, aliases)
    aliases -= words
    alias_occ: list[int] = []
    if aliases:
        alias_occ = _occurrence_lines(text, aliases, offsets)
        used = _scan([s for s in body if _touches_span(s, alias_occ)], alias_occ, aliases, None) or used
    if not used:
        return Plan(True, "", 0, len(body))
    if not reduce:
        return Plan(False, text, len(body), len(body), [s for s, _ in _groups(body)[1]])
    return _reduce(text, lines, offsets, body, sorted(set(occ) | set(alias_occ)))


def _touches_span(stmt: ast.stmt, occ: list[int]) -> bool:
    i = bisect.bisect_left(occ, _first_line(stmt))
    return i < len(occ) and occ[i] <= (stmt.end_lineno or stmt.lineno)


def _groups(body: list[ast.stmt]) -> tuple[list[list[ast.stmt]], list[tuple[int, int]]]:
    """Statements that share a line (`a = 1; b = 2`) form one group: kept or blanked together."""
    groups: list[list[ast.stmt]] = []
    spans: list[tuple[int, int]] = []
    for stmt in body:
        first, last = _first_line(stmt), stmt.end_lineno or stmt.lineno
        if spans and first <= spans[-1][1]:
            groups[-1].append(stmt)
            spans[-1] = (spans[-1][0], max(spans[-1][1], last))
        else:
            groups.append([stmt])
            spans.append((first, last))
    return groups, spans


def _reduce(text: str, lines: list[str], offsets: _Lines, body: list[ast.stmt], occ: list[int]) -> Plan:
    groups, spans = _groups(body)
    starts = [s for s, _ in spans]

    def group_of_line(line: int) -> int | None:
        i = bisect.bisect_right(starts, line) - 1
        return i if i >= 0 and spans[i][0] <= line <= spans[i][1] else None

    def mentions(g: int) -> set[str]:
        first, last = spans[g]
        return set(_WORD.findall(text, offsets.starts[first - 1], offsets.starts[last]))

    binds = [set().union(*(_binds(s) for s in group)) for group in groups]
    binders: dict[str, list[int]] = {}
    for g, names in enumerate(binds):
        for name in names:
            binders.setdefault(name, []).append(g)
    defs = {s.name for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}

    kept: set[int] = set()
    for line in occ:
        g = group_of_line(line)
        if g is not None:
            kept.add(g)
    roots = sorted(kept)
    for g, group in enumerate(groups):  # `from __future__` and star imports change how others parse/resolve
        if any(isinstance(s, ast.ImportFrom) and (s.module == "__future__" or s.names[0].name == "*") for s in group):
            kept.add(g)
    # call sites: statements mentioning what a root defines, or a module-level def a root mentions
    callees: set[str] = set()
    for g in roots:
        if not all(isinstance(s, _IMPORT) for s in groups[g]):
            callees |= binds[g]
        callees |= mentions(g) & defs
    for line in _occurrence_lines(text, callees, offsets):
        g = group_of_line(line)
        if g is not None:
            kept.add(g)
    # bindings of every name a kept statement mentions, to a fixpoint
    seen: set[str] = set()
    work = list(kept)
    while work:
        g = work.pop()
        for name in mentions(g) - seen:
            seen.add(name)
            for other in binders.get(name, ()):
                if other not in kept:
                    kept.add(other)
                    work.append(other)
    if len(kept) == len(groups):
        return Plan(False, text, len(body), len(body), starts)
    out = list(lines)
    for g, (first, last) in enumerate(spans):
        if g not in kept:
            for i in range(first - 1, min(last, len(out))):
                line = out[i]
                out[i] = line[len(line.rstrip("\r\n")):]
    kept_stmts = sum(len(groups[g]) for g in kept)
    return Plan(False, "".join(out), kept_stmts, len(body), [starts[g] for g in sorted(kept)])
