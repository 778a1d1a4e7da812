"""Gate 3: blank, line for line, the parts of a file the model cannot need.

Every line of what is kept stays where it was, and every column except in the method skeletons
below (whose statements the model never reports on). What the model reads, and so what is kept
(``tests/test_prefilter.py`` and ``bench/verify_reduction.py`` check it against the full model; a
rule that reads more must extend this):

- roots: top-level statements (or members of top-level classes) holding a marker or an alias, in
  full; the defs named in their ``return`` values, lambdas or marker-call arguments (grad functions,
  call-form targets), and the defs named in those defs' returns (grads of call-form targets): at
  the top level or, for a method, in its own class (``self.name``), as the model resolves them;
- call sites: statements naming a function a root defines (methods: within their class, and
  anywhere as ``Class.method(``);
- name resolution: every top-level statement binding a name a kept statement mentions, to a
  fixpoint; defs and classes kept only for that become stubs (header and ``...``), other statements
  stay whole. Mentions are every word of the kept text (strings and comments included). Kept whole
  instead: defs that the roots and call sites call or decorate with (helpers whose returns the
  tensor analysis reads, one call deep; decorators whose wrappers CG008 reads), classes they call
  (CG012 reads the bases and methods of an object passed as an input) and classes that mention
  ``Variable``/``add_weight`` (a module-level object built from one may hold variables); and
  statements calling ``run_functions_eagerly`` are roots;
- in kept classes: members that are not defs, in full; methods that define (``self.x = ...``) or
  are named like (properties) a ``self.x`` a full member reads become skeletons: the header, the
  ``self.x = ...`` assignments and the imports of the method's own scope, each moved to the body's
  indentation on its own lines (what ``VariableFinder._class_facts`` reads), or ``...``. Grad
  methods and call-form targets are full as defs named above.
- for the rules that follow values further: the kernels of ``tf.numpy_function`` calls (named or
  through ``functools.partial``) are kept whole like the helpers (CG016 reads their returns), and a
  kept member reading ``self.trainable_variables`` (or the like) reads every ``self.x = ...`` of
  its class, so those methods become skeletons too (CG004).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Set
from typing import cast

from cg_lint.prefilter.lines import Lines, first_line, groups, starts_line, touches

_WORD = re.compile(r"\w+")
# `tf.config.run_functions_eagerly(True)` (and the experimental spelling): the model reads it
_EAGER_SWITCH = re.compile(r"run_functions_eagerly\b")
# `name(`, and `@name` (a decorator of the file, whose wrapper CG008 reads): what the analyses follow
_CALLED = re.compile(r"\b(\w+)\s*\(|^[ \t]*@[ \t]*(\w+)", re.M)
# a class whose instances may hold variables (a config object at module level): VariableFinder reads it
_VARIABLE_WORDS = re.compile(r"\b(?:Variable|add_weight|add_variable|get_variable)\b")
_RETURN_WORD = re.compile(r"\b(?:return|lambda)\b")
_SELF_ATTR = re.compile(r"\b(?:self|cls)\s*\.\s*(\w+)")
# `self.x` where it may be assigned (over-approximated): before `=` or `op=`; in a target list
# (`,` `)` `]` with an `=` later on the line, or on a `for` line); annotated; `with ... as self.x`
_SELF_STORE = re.compile(
    r"\b(?:self|cls)\s*\.\s*(\w+)\s*(?:(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)|in\b)"
    r"|\b(?:self|cls)\s*\.\s*(\w+)\s*[,)\]](?=[^\n]*(?<![=!<>])=(?!=))"
    r"|^[ \t]*(?:async\s+)?for\b[^\n]*?\b(?:self|cls)\s*\.\s*(\w+)"
    r"|^[ \t]*(?:self|cls)\s*\.\s*(\w+)\s*:"
    r"|\bas\s+(?:self|cls)\s*\.\s*(\w+)", re.M)
# a tf.numpy_function kernel named as its first argument: CG016 reads its returns
_KERNEL = re.compile(r"\b(?:numpy_function|py_func)\s*\(\s*(?:func\s*=\s*)?"
                     r"(?:(?:functools\s*\.\s*)?partial\s*\(\s*)?(\w+)")
# a class's collections of all its weights: a member reading one reads every `self.x = ...`
_ALL_WEIGHTS = frozenset({"trainable_variables", "trainable_weights", "weights", "variables"})
# what a unit references and binds depends only on its text (and the spellings): kept per text
MAX_CACHED_CHARS = 1_000_000
_DEF = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORT = (ast.Import, ast.ImportFrom)
_BLANK, _STUB, _FULL, _STORES = 0, 1, 2, 3


class _Unit:
    """A top-level statement group, or one member of a top-level class (its body statements)."""

    __slots__ = ("stmts", "first", "last", "cls", "members", "name", "is_def", "body_line", "state", "stores")

    def __init__(self, stmts: list[ast.stmt], first: int, last: int, lines: list[str],
                 cls: _Unit | None = None) -> None:
        self.stmts, self.first, self.last, self.cls = stmts, first, last, cls
        one = stmts[0] if len(stmts) == 1 else None
        self.name = one.name if isinstance(one, _DEF) else None
        self.is_def = isinstance(one, (ast.FunctionDef, ast.AsyncFunctionDef))
        self.members: list[_Unit] = []
        # first line of the body: a def is stubbed, a class reduced, only when its body starts a line
        # of its own (not `) -> int: ...` after a multi-line signature)
        self.body_line = 0
        if one is not None and isinstance(one, _DEF) and one.body and starts_line(one.body[0], lines):
            self.body_line = first_line(one.body[0])
        self.state = _BLANK
        self.stores: list[tuple[int, int]] = []  # _STORES: the lines of its `self.x = ...` statements


class TextMemo:
    """What a unit references and binds, by its text (and the spellings asked for), bounded by the
    total length of those texts. An editor re-lints a file on every save and most units are
    unchanged between saves; its owner decides how long the memo lives (``cg_lint.engine.Caches``)."""

    def __init__(self, limit: int = MAX_CACHED_CHARS) -> None:
        self.limit = limit
        self.chars = 0
        self._items: dict[tuple[str, frozenset[str] | None], set[str]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: tuple[str, frozenset[str] | None], compute: Callable[[], set[str]]) -> set[str]:
        """The kept answer for ``key``, or ``compute()``'s, kept; the caller must not change the set."""
        found = self._items.get(key)
        if found is None:
            if self.chars > self.limit:
                self._items.clear()
                self.chars = 0
            found = self._items[key] = compute()
            self.chars += len(key[0])
        return found


def reduce(text: str, lines: list[str], offsets: Lines, body: list[ast.stmt], occ: list[int],
           spellings: set[str], memo: TextMemo | None = None) -> tuple[str, int, list[int]] | None:
    """The reduced text, its top-level statements kept (count) and their first lines; None when
    everything is kept. ``occ``: lines holding a marker or alias; ``spellings``: those words."""
    reduction = _Reduction(text, lines, offsets, body, memo if memo is not None else TextMemo())
    roots = reduction.keep_roots(occ)
    reduction.keep_called(roots, spellings, occ)
    reduction.keep_class_members()
    reduction.keep_bindings()
    if reduction.keeps_everything():
        return None
    return reduction.render()


class _Reduction:
    """The units of one file and what is kept of each, decided in the steps ``reduce`` runs."""

    def __init__(self, text: str, lines: list[str], offsets: Lines, body: list[ast.stmt], memo: TextMemo) -> None:
        self.text, self.lines, self.offsets, self.memo = text, lines, offsets, memo
        body_groups, spans = groups(body)
        self.top = [_Unit(g, a, b, lines) for g, (a, b) in zip(body_groups, spans)]
        # units a line can belong to, in line order (class headers excluded)
        self.leaves: list[_Unit] = []
        for unit in self.top:
            if unit.name is not None and not unit.is_def and unit.body_line:
                for g, (a, b) in zip(*groups(unit.stmts[0].body)):
                    unit.members.append(_Unit(g, a, b, lines, unit))
                self.leaves.extend(unit.members)
            else:
                self.leaves.append(unit)
        self.leaf_starts = [u.first for u in self.leaves]
        self.top_starts = [u.first for u in self.top]
        self.full: list[_Unit] = []  # units made full, in that order
        self.skeletons: list[_Unit] = []
        self._words: dict[int, set[str]] = {}
        self._stored: dict[int, set[str]] = {}
        self.binders: dict[str, list[_Unit]] = {}

    # -- what a unit says ------------------------------------------------------------------------
    def unit_at(self, line: int) -> _Unit | None:
        i = bisect.bisect_right(self.leaf_starts, line) - 1
        if i >= 0 and self.leaves[i].first <= line <= self.leaves[i].last:
            return self.leaves[i]
        j = bisect.bisect_right(self.top_starts, line) - 1  # a class header line
        top = self.top
        return top[j] if j >= 0 and top[j].first <= line <= top[j].last else None

    def words(self, first: int, last: int) -> set[str]:
        starts = self.offsets.starts
        return set(_WORD.findall(self.text, starts[first - 1], starts[min(last, len(self.lines))]))

    def unit_words(self, unit: _Unit) -> set[str]:
        """Every word of a unit (of a class's header only, for a class split into members)."""
        found = self._words.get(id(unit))
        if found is None:
            found = self.header_words(unit) if unit.members else self.words(unit.first, unit.last)
            self._words[id(unit)] = found
        return found

    def called(self, first: int, last: int) -> set[str]:
        """The names called in these lines (``name(``): the helpers the analyses may follow."""
        starts = self.offsets.starts
        return {a or b for a, b in _CALLED.findall(self.text, starts[first - 1], starts[min(last, len(self.lines))])}

    def header_words(self, unit: _Unit) -> set[str]:
        return self.words(unit.first, (unit.body_line or unit.last + 1) - 1)

    def kernels(self, unit: _Unit) -> set[str]:
        """The ``tf.numpy_function`` kernels these lines name: kept whole like called helpers."""
        starts = self.offsets.starts
        return set(_KERNEL.findall(self.text, starts[unit.first - 1], starts[min(unit.last, len(self.lines))]))

    def stored(self, unit: _Unit) -> set[str]:
        found = self._stored.get(id(unit))
        if found is None:
            found = self._stored[id(unit)] = _stores(self.text, self.offsets, unit)
        return found

    def per_text(self, unit: _Unit, spellings: frozenset[str] | None, compute: Callable[[_Unit], set[str]]) -> set[str]:
        """``compute(unit)``, kept per unit text and ``spellings`` in the memo."""
        starts = self.offsets.starts
        key = (self.text[starts[unit.first - 1]:starts[unit.last]], spellings)
        return self.memo.get(key, lambda: compute(unit))

    def make_full(self, unit: _Unit) -> None:
        if unit.state != _FULL:
            unit.state = _FULL
            self.full.append(unit)
            if unit.cls is not None and unit.cls.state != _FULL:
                unit.cls.state = _FULL
                self.full.append(unit.cls)

    # -- the steps -------------------------------------------------------------------------------
    def keep_roots(self, occ: list[int]) -> list[_Unit]:
        """Units holding a marker or alias, in full (a class header's: the whole class), and the
        imports that change how the rest parses or resolves."""
        roots: list[_Unit] = []
        for line in occ:
            unit = self.unit_at(line)
            if unit is None:
                continue
            if unit.members and line < unit.body_line:  # in a class header: keep the class whole
                for m in unit.members:
                    self.make_full(m)
                unit.members = []
            self.make_full(unit)
            roots.append(unit)
        for unit in self.top:  # `from __future__` and star imports; the eager-execution switch
            if any(isinstance(s, ast.ImportFrom) and (s.module == "__future__" or s.names[0].name == "*")
                   for s in unit.stmts) or self.mentions(unit, _EAGER_SWITCH):
                self.make_full(unit)
        return roots

    def mentions(self, unit: _Unit, pattern: re.Pattern[str]) -> bool:
        starts = self.offsets.starts
        return pattern.search(self.text, starts[unit.first - 1], starts[min(unit.last, len(self.lines))]) is not None

    def keep_called(self, roots: list[_Unit], spellings: set[str], occ: list[int]) -> None:
        """The defs the roots return or pass to a marker call (grads, call-form targets) and what
        those return; then every unit that names a function the roots define (call sites)."""
        callees = self._keep_returned_defs(roots, spellings, occ)
        through_class: list[tuple[frozenset[str], re.Pattern[str]]] = []
        for unit in roots:
            if unit.cls is not None:
                if unit.is_def and unit.name is not None:  # a method: called as self.name() in its class
                    callees.setdefault(unit.cls, set()).add(unit.name)
                    if unit.cls.name is not None:  # ... and as Class.name(self, ...) anywhere (CG014)
                        through_class.append((frozenset((unit.cls.name, unit.name)), re.compile(
                            rf"\b{re.escape(unit.cls.name)}\s*\.\s*{re.escape(unit.name)}\s*\(")))
            elif not all(isinstance(s, _IMPORT) for s in unit.stmts):
                callees.setdefault(None, set()).update(self.per_text(unit, None, _unit_binds))
        headers = [u for u in self.top if u.members]
        for words, pattern in through_class:
            for unit in self.leaves:  # the words first: a regex per unit is what costs
                if unit.state != _FULL and words <= self.unit_words(unit) and self.mentions(unit, pattern):
                    self.make_full(unit)
        for scope, names in callees.items():
            for unit in (self.leaves + headers) if scope is None else [scope, *scope.members]:
                if unit.state != _FULL and not names.isdisjoint(self.unit_words(unit)):
                    self.make_full(unit)

    def _keep_returned_defs(self, roots: list[_Unit], spellings: set[str], occ: list[int]
                            ) -> dict[_Unit | None, set[str]]:
        """Keep the defs named two levels down from the roots; where calls can reach those named by
        the roots themselves: the module (None) or a class."""
        text, offsets, frozen = self.text, self.offsets, frozenset(spellings)

        def referenced(unit: _Unit) -> set[str]:
            return _referenced(unit, spellings, text, offsets, occ)

        defs: dict[str, list[_Unit]] = {}
        for unit in self.leaves:
            if unit.is_def and unit.name is not None:
                defs.setdefault(unit.name, []).append(unit)
        callees: dict[_Unit | None, set[str]] = {}
        level = roots
        for depth in range(2):
            nxt = []
            for unit in level:
                for name in self.per_text(unit, frozen, referenced) & defs.keys():
                    for d in defs[name]:
                        if d.cls is not None and d.cls is not unit.cls and d.cls is not unit:
                            continue  # the model resolves a name to its scope's defs or its own class's methods
                        if depth == 0:
                            callees.setdefault(d.cls, set()).add(name)
                        if d.state != _FULL:
                            self.make_full(d)
                            nxt.append(d)
            level = nxt
        return callees

    def keep_class_members(self) -> None:
        """Inside kept classes: members that are not defs, in full; methods that define (or are
        named like) a ``self.x`` a full member reads, as skeletons where that is safe."""
        for unit in self.top:
            for name in self.per_text(unit, None, _unit_binds):
                self.binders.setdefault(name, []).append(unit)
        text, starts = self.text, self.offsets.starts
        for unit in self.top:
            if unit.state != _FULL or not unit.members:
                continue
            for m in unit.members:
                if not m.is_def:
                    self.make_full(m)
            reads: set[str] = set()
            done: set[int] = set()
            changed = True
            while changed:
                changed = False
                for m in unit.members:
                    if m.state == _FULL and id(m) not in done:
                        done.add(id(m))
                        reads |= set(_SELF_ATTR.findall(text, starts[m.first - 1], starts[m.last]))
                every = not reads.isdisjoint(_ALL_WEIGHTS)  # self.trainable_variables reads every store
                for m in unit.members:
                    if m.state == _BLANK and (m.name in reads or not self.unit_words(m).isdisjoint(reads)
                                              and not self.stored(m).isdisjoint(reads)
                                              or every and m.is_def and bool(self.stored(m))):
                        # the model reads a method kept for its name or its stores only for the
                        # `self.x = ...` assignments (class facts): keep those, unless that is unsafe
                        stores = _store_lines(m, self.lines, self.binders.keys()) if m.is_def and m.body_line else None
                        if stores is None:
                            self.make_full(m)
                            changed = True
                        else:
                            m.state, m.stores = _STORES, stores
                            self.skeletons.append(m)

    def keep_bindings(self) -> None:
        """Name resolution: the bindings of every name a kept statement mentions, to a fixpoint;
        defs and classes kept only for that become stubs, except the helpers what is kept so far
        names (the tensor analysis reads their returns, one call deep) and classes that may give
        module-level objects their variables: those are kept whole."""
        helper_words = set().union(*(self.called(u.first, u.last) for u in self.full if not u.members),
                                   *(self.called(m.first, m.last) for m in self.skeletons),
                                   *(self.kernels(u) for u in self.full if not u.members))
        seen: set[str] = set()
        work: list[_Unit] = [*self.full, *self.skeletons]
        while work:
            unit = work.pop()
            if unit.state == _FULL:
                mentioned = self.unit_words(unit)
            elif unit.state == _STORES:
                mentioned = self.header_words(unit).union(*(self.words(a, b) for a, b in unit.stores))
            else:
                mentioned = self.header_words(unit)
            for name in mentioned - seen:
                seen.add(name)
                for other in self.binders.get(name, ()):
                    if other.state != _BLANK:
                        continue
                    if (other.is_def and name in helper_words
                            or other.name is not None and not other.is_def and (
                                self.mentions(other, _VARIABLE_WORDS) or name in helper_words)):
                        other.state = _FULL
                        self.full.append(other)
                        for m in other.members:
                            if m.state == _BLANK:
                                m.state = _FULL
                                work.append(m)
                    elif other.name is not None and other.body_line:
                        other.state = _STUB  # only its binding matters: header and `...`
                    else:
                        other.state = _FULL
                        self.full.append(other)
                    work.append(other)

    def keeps_everything(self) -> bool:
        return all(u.state == _FULL and all(m.state == _FULL for m in u.members) for u in self.top)

    def render(self) -> tuple[str, int, list[int]]:
        """Blank what is not kept, line for line; stubs and skeletons keep their lines too."""
        lines = self.lines
        out = list(lines)

        def blank(first: int, last: int) -> None:
            for i in range(first - 1, min(last, len(out))):
                out[i] = out[i][len(out[i].rstrip("\r\n")):]

        def stub_at(line: int) -> None:  # `...` at the original line's indentation
            original = lines[line - 1]
            content = original.rstrip("\r\n")
            out[line - 1] = content[:len(content) - len(content.lstrip())] + "..." + original[len(content):]

        for unit in self.top:
            if unit.state == _BLANK:
                blank(unit.first, unit.last)
            elif unit.state == _STUB:
                blank(unit.body_line, unit.last)
                stub_at(unit.body_line)
            elif unit.members:
                dropped = [m for m in unit.members if m.state == _BLANK]
                for m in dropped:
                    blank(m.first, m.last)
                if len(dropped) == len(unit.members):
                    stub_at(unit.body_line)
                for m in unit.members:
                    if m.state == _STORES:
                        blank(m.body_line, m.last)
                        indent = _indent(lines[m.body_line - 1])
                        for a, b in m.stores:  # each at the body's indentation, on its own lines
                            out[a - 1] = indent + lines[a - 1].lstrip(" \t\f")
                            out[a:b] = lines[a:b]
                        if not m.stores:
                            stub_at(m.body_line)
        kept = [u for u in self.top if u.state != _BLANK]
        return "".join(out), sum(len(u.stmts) for u in kept), [u.first for u in kept]


def _unit_binds(unit: _Unit) -> set[str]:
    return set().union(*(_binds(s) for s in unit.stmts))


def _referenced(unit: _Unit, spellings: set[str], text: str, offsets: Lines, occ: list[int]) -> set[str]:
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
            end = offsets.starts[min(last, len(offsets.starts) - 1)]
            found |= set(_WORD.findall(text, offsets.starts[node.lineno - 1], end))
            if not isinstance(node, ast.Call):
                continue
        for child in ast.iter_child_nodes(node):
            if touches(child, interesting):
                stack.append(child)
    return found


def _store_lines(unit: _Unit, lines: list[str], module_names: Set[str]) -> list[tuple[int, int]] | None:
    """The lines of a method's ``self.x = ...`` statements (nested defs included, nested classes
    not: what ``VariableFinder._class_facts`` reads) and of the imports in its own scope (which
    they may resolve through), to be kept at the body's indentation.

    None when that could change what the model sees: such a statement does not start its line or
    shares a line with another statement, or the method binds (outside its parameters and those
    imports) a name a kept statement mentions that is also a module-level name; moving the statement
    out of its block or nested def could change what that name resolves to. (For any other name,
    the callee names the model reads from these statements are the same local or unbound.)"""
    func = cast("ast.FunctionDef | ast.AsyncFunctionDef", unit.stmts[0])  # a def: _Unit.is_def
    kept: list[ast.stmt] = []
    moved: set[int] = set()  # kept statements of nested defs: they leave their scope
    simple: list[tuple[int, int]] = []  # simple statements' lines (compound ones may enclose a store)
    stack: list[tuple[ast.stmt, bool]] = [(s, False) for s in func.body]  # (statement, in a nested def)
    while stack:
        node, nested = stack.pop()
        if (isinstance(node, ast.Assign) and any(_is_self_attr(t) for t in node.targets)
                or isinstance(node, _IMPORT) and not nested):
            kept.append(node)
            if nested:
                moved.add(id(node))
        if not hasattr(node, "body"):
            simple.append((node.lineno, node.end_lineno or node.lineno))
        elif not isinstance(node, ast.ClassDef):
            inner = nested or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            stack.extend((child, inner) for child in _child_statements(node))
    if not any(isinstance(n, ast.Assign) for n in kept):
        return []  # imports alone tell the model nothing
    kept.sort(key=lambda n: n.lineno)
    found: list[tuple[int, int]] = []
    for node in kept:
        a, b = node.lineno, node.end_lineno or node.lineno
        if node.col_offset != len(_indent(lines[a - 1])):
            return None  # after a header (`if x: self.w = ...`) or a `;`
        if sum(1 for first, last in simple if first <= b and last >= a) > 1:
            return None  # another statement on these lines
        found.append((a, b))
    mentioned = set().union(*(_WORD.findall("".join(lines[a - 1:b])) for a, b in found))
    risky = mentioned & module_names
    if not risky:
        return found
    # a kept statement binds only in the scope it stays in, unless it leaves a nested def
    in_place = [n for n in kept if id(n) not in moved]
    if not moved:
        covered = {i for a, b in found for i in range(a, b + 1)}
        rest = set(_WORD.findall("".join(line for i, line in enumerate(lines[unit.body_line - 1:unit.last],
                                                                          unit.body_line) if i not in covered)))
        if rest.isdisjoint(risky):
            return found  # nothing else in the body even names them
    return None if risky & _bindings(func, in_place) else found


def _child_statements(node: ast.stmt) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for field in ("body", "orelse", "finalbody"):
        out.extend(getattr(node, field, ()))
    for clause in (*getattr(node, "handlers", ()), *getattr(node, "cases", ())):
        out.extend(clause.body)
    return out


def _bindings(func: ast.FunctionDef | ast.AsyncFunctionDef, kept: list[ast.stmt]) -> set[str]:
    """Names bound in a method's body (nested scopes included, its parameters not), outside the
    statements of ``kept`` (which bind where they did)."""
    skip = {id(n) for n in kept}
    own = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    own.update(a.arg for a in (func.args.vararg, func.args.kwarg) if a is not None)
    bound: set[str] = set()
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.ClassDef):
            bound.add(node.name)
            continue
        bound.update(_bound_here(node))
        stack.extend(ast.iter_child_nodes(node))
    return bound - own


def _is_self_attr(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _bound_here(node: ast.AST) -> list[str]:
    """Names ``node`` itself binds (not its children)."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    # a class, `except ... as name`, match patterns
    return [v for v in (getattr(node, "name", None), getattr(node, "rest", None)) if isinstance(v, str)]


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t\f"))]


def _stores(text: str, offsets: Lines, unit: _Unit) -> set[str]:
    found: set[str] = set()
    for parts in _SELF_STORE.findall(text, offsets.starts[unit.first - 1], offsets.starts[unit.last]):
        found.update(g for g in parts if g)
    return found


def _last_name(expr: ast.AST) -> str | None:
    return expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else None




def _binds(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in the module (over-approximated)."""
    if isinstance(stmt, _DEF):
        return {stmt.name}
    out: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        out.update(_bound_here(node))
        # a def or class binds only its name here; a lambda binds nothing outside itself
        if not isinstance(node, (ast.Name, ast.alias, ast.Lambda, *_DEF)):
            stack.extend(ast.iter_child_nodes(node))
    return out


class RecentTexts(TextMemo):
    """The reduction's per-text facts, kept while some file asks for them: two generations, the
    answers asked for since the last ``age`` and those from the one before. A text no file asked
    for in that long (an edited statement's earlier versions) is forgotten, so an editor's process
    keeps the facts of its recent files, not of every edit until ``TextMemo``'s bound of
    characters (its answers are a few KB each: thousands of edits)."""

    def __init__(self) -> None:
        super().__init__()  # its own entries stay empty: the generations hold them
        self.young, self.old = TextMemo(), TextMemo()

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def get(self, key: tuple[str, frozenset[str] | None], compute: Callable[[], set[str]]) -> set[str]:
        return self.young.get(key, lambda: self.old.get(key, compute))

    def age(self) -> None:
        self.young, self.old = TextMemo(), self.young
