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
_RETURN_WORD = re.compile(r"\b(?:return|lambda)\b")
_IMPORT_WORD = re.compile(r"\bimport\b")
_SELF_ATTR = re.compile(r"\b(?:self|cls)\s*\.\s*(\w+)")
# `self.x` where it may be assigned (over-approximated): before `=` or `op=`; in a target list
# (`,` `)` `]` with an `=` later on the line, or on a `for` line); annotated; `with ... as self.x`
_SELF_STORE = re.compile(
    r"\b(?:self|cls)\s*\.\s*(\w+)\s*(?:(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)|in\b)"
    r"|\b(?:self|cls)\s*\.\s*(\w+)\s*[,)\]](?=[^\n]*(?<![=!<>])=(?!=))"
    r"|^[ \t]*(?:async\s+)?for\b[^\n]*?\b(?:self|cls)\s*\.\s*(\w+)"
    r"|^[ \t]*(?:self|cls)\s*\.\s*(\w+)\s*:"
    r"|\bas\s+(?:self|cls)\s*\.\s*(\w+)", re.M)
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
    # first lines of the body statements of top-level classes, by the class's first line
    members: dict[int, list[int]] | None = None
    # why the text must not reach libcst: (message, line, column); the file is reported, not parsed
    error: tuple[str, int | None, int | None] | None = None


# libcst's native parser overflows the C stack (a segfault, not an exception) on expressions nested
# some thousands deep, and its time grows quadratically long before that (1,000 terms ~0.3 s).
MAX_DEPTH = 1000


def plan(text: str, names: tuple[str, ...], tree: ast.Module | None = None, reduce: bool = True) -> Plan:
    """Gates 2 and 3 for one decoded source; ``tree`` may be passed when the caller has it (flake8).

    Text that CPython cannot parse is reported with CPython's message and never given to libcst:
    what CPython rejects, libcst cannot lint either, and some of it (thousands of nested brackets)
    crashes libcst's parser outright.
    """
    if tree is None:
        tree_or_error = parse_ast(text)
        if not isinstance(tree_or_error, ast.Module):
            return Plan(False, "", error=tree_or_error)
        tree = tree_or_error
    try:
        result = _plan(text, names, tree, reduce)
    except (RecursionError, MemoryError):
        return Plan(False, "", error=("cannot parse: nesting too deep", None, None))
    if not result.skip and result.error is None:
        result.members = _member_starts(tree.body)
        depth = _too_deep(tree.body if result.text is text else _kept(tree.body, result), text, _Lines(split_lines(text)))
        if depth:
            result.error = (f"not analysed: an expression nests more than {MAX_DEPTH} levels deep", depth, None)
    return result


def parse_ast(text: str) -> ast.Module | tuple[str, int | None, int | None]:
    """The ``ast``, or why CPython rejects the text (message, line, column)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc.: not ours to report
            return ast.parse(text)
    except SyntaxError as e:
        return (f"cannot parse: {e.msg or 'invalid syntax'}", e.lineno, e.offset)
    except ValueError as e:  # null bytes
        return (f"cannot parse: {e}", None, None)
    except (RecursionError, MemoryError, OverflowError):
        return ("cannot parse: nesting too deep", None, None)


def _member_starts(body: list[ast.stmt]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for stmt in body:
        if isinstance(stmt, ast.ClassDef) and stmt.body and stmt.body[0].lineno > stmt.lineno:
            out[_first_line(stmt)] = [first for first, _ in _groups(stmt.body)[1]]
    return out


def _kept(body: list[ast.stmt], result: "Plan") -> list[ast.stmt]:
    firsts = set(result.starts or ())
    return [s for group, (first, _) in zip(*_groups(body)) if first in firsts for s in group]


def _too_deep(stmts: list[ast.stmt], text: str, lines: "_Lines") -> int:
    """First line of an expression libcst would nest deeper than MAX_DEPTH, else 0.

    An expression cannot nest deeper than its length in characters, so only long ones are walked.
    libcst nests what ``ast`` keeps flat in two places: ``a or b or c`` and implicit string
    concatenation (``"a" "b" "c"``); both are counted.
    """
    for stmt in stmts:
        if _too_deep_stmt(stmt, text, lines):
            return stmt.lineno
    return 0


def _too_deep_stmt(stmt: ast.stmt, text: str, lines: "_Lines") -> bool:
    stack: list[tuple[ast.AST, int]] = [(stmt, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, ast.expr):
            if node.end_lineno == node.lineno:
                size = (node.end_col_offset or 0) - node.col_offset  # bytes >= characters
            else:
                size = lines.starts[min(node.end_lineno or node.lineno, len(lines.starts) - 1)] - lines.starts[node.lineno - 1]
            if depth + size <= MAX_DEPTH:
                continue
            if isinstance(node, ast.BoolOp):
                depth += len(node.values)
            elif isinstance(node, (ast.Constant, ast.JoinedStr)):
                if _string_parts(node, text, lines) + depth > MAX_DEPTH:
                    return True
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    return False


def _string_parts(node: ast.expr, text: str, lines: _Lines) -> int:
    """How many literals make up a (long) string constant: libcst nests each one."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return 1
    segment = text[lines.starts[node.lineno - 1]:lines.starts[min(node.end_lineno or node.lineno, len(lines.starts) - 1)]]
    if (segment.count('"') + segment.count("'")) // 2 <= MAX_DEPTH // 2:
        return 1  # too few quotes for that many literals (a long docstring)
    import io
    import tokenize

    try:
        return sum(1 for t in tokenize.generate_tokens(io.StringIO(segment).readline)
                   if t.type == tokenize.STRING or t.type == getattr(tokenize, "FSTRING_START", -1))
    except (tokenize.TokenError, SyntaxError):
        return MAX_DEPTH + 1


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
    return _reduce(text, lines, offsets, body, sorted(set(occ) | set(alias_occ)), words | aliases)


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


class _Unit:
    """A top-level statement group, or one member of a top-level class (its body statements)."""

    __slots__ = ("stmts", "first", "last", "cls", "members", "name", "is_def", "body_line", "state")

    def __init__(self, stmts: list[ast.stmt], first: int, last: int, lines: list[str],
                 cls: "_Unit | None" = None) -> None:
        self.stmts, self.first, self.last, self.cls = stmts, first, last, cls
        one = stmts[0] if len(stmts) == 1 else None
        self.name = one.name if isinstance(one, _DEF) else None
        self.is_def = isinstance(one, (ast.FunctionDef, ast.AsyncFunctionDef))
        self.members: list[_Unit] = []
        # first line of the body: a def is stubbed, a class reduced, only when its body starts a line
        # of its own (not `) -> int: ...` after a multi-line signature)
        self.body_line = 0
        if one is not None and isinstance(one, _DEF) and one.body and _starts_line(one.body[0], lines):
            self.body_line = _first_line(one.body[0])
        self.state = _BLANK


_BLANK, _STUB, _FULL = 0, 1, 2


def _starts_line(stmt: ast.stmt, lines: list[str]) -> bool:
    """Whether nothing but indentation precedes ``stmt`` (or its first decorator) on its line."""
    line = lines[_first_line(stmt) - 1] if _first_line(stmt) <= len(lines) else ""
    if getattr(stmt, "decorator_list", None):
        return line.lstrip().startswith("@")
    return not line.encode("utf-8", "surrogatepass")[:stmt.col_offset].strip()


def _reduce(text: str, lines: list[str], offsets: _Lines, body: list[ast.stmt], occ: list[int],
            spellings: set[str]) -> Plan:
    """Gate 3. What the model reads, and so what is kept (tests/test_prefilter.py checks it):

    - roots: statements holding a marker or alias, in full, and the defs named in their ``return``
      values or as arguments of a marker call (grad functions, call-form targets), and the defs
      named in those defs' returns (grads of call-form targets), in full;
    - call sites: statements naming a function a root defines (or such a def), in full;
    - name resolution: every top-level statement binding a name a kept statement mentions; defs and
      classes kept only for that become stubs (header and ``...``), other statements stay whole;
    - in kept classes: members that are not defs, import, or define a ``self.x`` a kept member
      reads, or are named by one (properties, grad methods).
    """
    groups, spans = _groups(body)
    top = [_Unit(g, a, b, lines) for g, (a, b) in zip(groups, spans)]
    leaves: list[_Unit] = []  # units a line can belong to, in line order (class headers excluded)
    for unit in top:
        cls = unit.stmts[0]
        if unit.name is not None and not unit.is_def and unit.body_line:
            for g, (a, b) in zip(*_groups(cls.body)):
                unit.members.append(_Unit(g, a, b, lines, unit))
            leaves.extend(unit.members)
        else:
            leaves.append(unit)
    leaf_starts = [u.first for u in leaves]
    top_starts = [u.first for u in top]

    def unit_at(line: int) -> _Unit | None:
        i = bisect.bisect_right(leaf_starts, line) - 1
        if i >= 0 and leaves[i].first <= line <= leaves[i].last:
            return leaves[i]
        j = bisect.bisect_right(top_starts, line) - 1  # a class header line
        return top[j] if j >= 0 and top[j].first <= line <= top[j].last else None

    def words(first: int, last: int) -> set[str]:
        return set(_WORD.findall(text, offsets.starts[first - 1], offsets.starts[min(last, len(lines))]))

    cache: dict[int, set[str]] = {}

    def unit_words(unit: _Unit) -> set[str]:
        """Every word of a unit (of a class's header only, for a class split into members)."""
        found = cache.get(id(unit))
        if found is None:
            found = cache[id(unit)] = header_words(unit) if unit.members else words(unit.first, unit.last)
        return found

    def header_words(unit: _Unit) -> set[str]:
        return words(unit.first, (unit.body_line or unit.last + 1) - 1)

    full: list[_Unit] = []

    def make_full(unit: _Unit) -> None:
        if unit.state != _FULL:
            unit.state = _FULL
            full.append(unit)
            if unit.cls is not None and unit.cls.state != _FULL:
                unit.cls.state = _FULL
                full.append(unit.cls)

    roots: list[_Unit] = []
    for line in occ:
        unit = unit_at(line)
        if unit is None:
            continue
        if unit.members and line < unit.body_line:  # in a class header: keep the class whole
            for m in unit.members:
                make_full(m)
            unit.members = []
        make_full(unit)
        roots.append(unit)
    for unit in top:  # `from __future__` and star imports change how the rest parses or resolves
        if any(isinstance(s, ast.ImportFrom) and (s.module == "__future__" or s.names[0].name == "*")
               for s in unit.stmts):
            make_full(unit)

    defs: dict[str, list[_Unit]] = {}
    for unit in leaves:
        if unit.is_def:
            defs.setdefault(unit.name, []).append(unit)
    # defs the roots return or pass to a marker call (grads, call-form targets), and what those return
    callees: dict[_Unit | None, set[str]] = {}  # where calls can reach them: module (None) or a class
    level = roots
    for depth in range(2):
        nxt = []
        for unit in level:
            for name in _referenced(unit, spellings, text, offsets, occ) & defs.keys():
                for d in defs[name]:
                    if depth == 0:
                        callees.setdefault(d.cls, set()).add(name)
                    if d.state != _FULL:
                        make_full(d)
                        nxt.append(d)
        level = nxt
    for unit in roots:
        if unit.cls is not None:
            if unit.is_def:  # a method: called as self.name() inside its class only
                callees.setdefault(unit.cls, set()).add(unit.name)
        elif not all(isinstance(s, _IMPORT) for s in unit.stmts):
            callees.setdefault(None, set()).update(*(_binds(s) for s in unit.stmts))
    headers = [u for u in top if u.members]
    for scope, names in callees.items():
        for unit in (leaves + headers) if scope is None else [scope, *scope.members]:
            if unit.state != _FULL and not names.isdisjoint(unit_words(unit)):
                make_full(unit)

    # inside kept classes: members that are not defs, hold imports, or define/are what kept ones read
    for unit in top:
        if unit.state != _FULL or not unit.members:
            continue
        for m in unit.members:
            if not m.is_def or _IMPORT_WORD.search(text, offsets.starts[m.first - 1], offsets.starts[m.last]):
                make_full(m)
        reads: set[str] = set()
        done: set[int] = set()
        changed = True
        while changed:
            changed = False
            for m in unit.members:
                if m.state == _FULL and id(m) not in done:
                    done.add(id(m))
                    reads |= set(_SELF_ATTR.findall(text, offsets.starts[m.first - 1], offsets.starts[m.last]))
            for m in unit.members:
                if m.state != _FULL and (m.name in reads or _stores(text, offsets, m) & reads):
                    make_full(m)
                    changed = True

    # name resolution: bindings of every name a kept statement mentions, to a fixpoint
    binders: dict[str, list[_Unit]] = {}
    for unit in top:
        for name in set().union(*(_binds(s) for s in unit.stmts)):
            binders.setdefault(name, []).append(unit)
    seen: set[str] = set()
    work: list[_Unit] = list(full)
    while work:
        unit = work.pop()
        mentioned = unit_words(unit) if unit.state == _FULL else header_words(unit)
        for name in mentioned - seen:
            seen.add(name)
            for other in binders.get(name, ()):
                if other.state != _BLANK:
                    continue
                if other.name is not None and other.body_line:
                    other.state = _STUB  # only its binding matters: header and `...`
                else:
                    other.state = _FULL
                    full.append(other)
                work.append(other)
    if all(u.state == _FULL and all(m.state == _FULL for m in u.members) for u in top):
        return Plan(False, text, len(body), len(body), [u.first for u in top])

    out = list(lines)

    def blank(first: int, last: int) -> None:
        for i in range(first - 1, min(last, len(out))):
            out[i] = out[i][len(out[i].rstrip("\r\n")):]

    def stub_at(line: int) -> None:  # `...` at the original line's indentation
        original = lines[line - 1]
        content = original.rstrip("\r\n")
        out[line - 1] = content[:len(content) - len(content.lstrip())] + "..." + original[len(content):]

    for unit in top:
        if unit.state == _BLANK:
            blank(unit.first, unit.last)
        elif unit.state == _STUB:
            blank(unit.body_line, unit.last)
            stub_at(unit.body_line)
        elif unit.members:
            dropped = [m for m in unit.members if m.state != _FULL]
            for m in dropped:
                blank(m.first, m.last)
            if len(dropped) == len(unit.members):
                stub_at(unit.body_line)
    kept = [u for u in top if u.state != _BLANK]
    return Plan(False, "".join(out), sum(len(u.stmts) for u in kept), len(body), [u.first for u in kept])


def _referenced(unit: _Unit, spellings: set[str], text: str, offsets: _Lines, occ: list[int]) -> set[str]:
    """Words of the ``return`` values, lambdas and marker-call arguments in ``unit``."""
    begin, end = offsets.starts[unit.first - 1], offsets.starts[min(unit.last, len(offsets.starts) - 1)]
    interesting = sorted({offsets.line_of(m.start()) for m in _RETURN_WORD.finditer(text, begin, end)} | set(occ))
    found: set[str] = set()
    stack: list[ast.AST] = list(unit.stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Lambda)) or (
                isinstance(node, ast.Call) and _last_name(node.func) in spellings):
            last = node.end_lineno or node.lineno
            found |= set(_WORD.findall(text, offsets.starts[node.lineno - 1], offsets.starts[min(last, len(offsets.starts) - 1)]))
            if not isinstance(node, ast.Call):
                continue
        for child in ast.iter_child_nodes(node):
            if _touches(child, interesting):
                stack.append(child)
    return found


def _stores(text: str, offsets: _Lines, unit: _Unit) -> set[str]:
    found: set[str] = set()
    for groups in _SELF_STORE.findall(text, offsets.starts[unit.first - 1], offsets.starts[unit.last]):
        found.update(g for g in groups if g)
    return found


def _last_name(expr: ast.AST) -> str | None:
    return expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else None


