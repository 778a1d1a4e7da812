"""Decide cheaply which files, and which parts of them, the libcst model has to see.

Parsing with libcst costs about ten times CPython's ``ast``, so a file goes through three gates:

1. **Substring** (``might_contain``, on bytes): the file mentions a marker (``custom_gradient``, or
   the last component of a configured decorator name) anywhere, even in a comment.
2. **Use** (``plan``, on the ``ast``): a marker, or a name an import binds to one (``custom_gradient
   as cg``), is *used*: a Name or an attribute's last part that is read and is not itself the base
   of an attribute (``custom_gradient.generate_name()`` names the module). Decorators and calls are
   uses, and so is any other read (``cg = tf.custom_gradient``), to stay conservative. A file that
   mentions markers only in imports, def/parameter/keyword names, assignment targets, longer
   identifiers, strings or comments cannot define a custom gradient and is skipped.
3. **Reduction** (``reduce.py``): what the model cannot need is blanked line for line.

Text CPython rejects is reported with CPython's message and never given to libcst (what CPython
rejects, libcst cannot lint either, and some of it crashes libcst's parser), and so are expressions
nested too deep for libcst (``depth.py``). ``tests/test_prefilter.py`` and
``bench/verify_reduction.py`` check gates 2 and 3 against the full model. Known limit of gate 1: an
identifier spelled with compatibility characters (``ｃustom_gradient``, equal after NFKC) is not
matched; libcst does not resolve it either.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from cg_lint.prefilter.depth import MAX_DEPTH, too_deep
from cg_lint.prefilter.lines import Lines, compact, first_line, groups, split_lines, touches, word_pattern
from cg_lint.prefilter.mentions import only_mentions
from cg_lint.prefilter.reduce import TextMemo, reduce as _reduce

__all__ = ["MARKER", "MAX_DEPTH", "Plan", "compact", "markers", "might_contain", "parse_ast", "plan", "split_lines"]

MARKER = "custom_gradient"


def markers(decorators: Iterable[str] = ()) -> tuple[str, ...]:
    """Substrings a file holding a custom gradient must contain."""
    return (MARKER, *sorted({d.rsplit(".", 1)[-1] for d in decorators} - {MARKER}))


def might_contain(data: bytes | str, names: tuple[str, ...]) -> bool:
    """Gate 1."""
    if isinstance(data, str):
        return any(m in data for m in names)
    return any(m.encode() in data for m in names)


@dataclass
class Plan:
    """What to hand to libcst: ``text`` (reduced or whole), or nothing when ``skip`` or ``error``."""

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


def plan(text: str, names: tuple[str, ...], tree: ast.Module | None = None, reduce: bool = True,
         memo: TextMemo | None = None) -> Plan:
    """Gates 2 and 3 for one decoded source; ``tree`` may be passed when the caller has it (flake8),
    ``memo`` keeps the reduction's per-text facts across calls."""
    if tree is None:
        if only_mentions(text, names):  # gate 1b: no occurrence can be a use; the ast would agree
            return Plan(True, "")
        tree_or_error = parse_ast(text)
        if not isinstance(tree_or_error, ast.Module):
            return Plan(False, "", error=tree_or_error)
        tree = tree_or_error
    try:
        result = _plan(text, names, tree, reduce, memo)
    except (RecursionError, MemoryError):
        return Plan(False, "", error=("cannot parse: nesting too deep", None, None))
    if not result.skip:
        result.members = _member_starts(tree.body)
        kept = tree.body if result.text is text else _kept(tree.body, result.starts or [])
        line = too_deep(kept, text, Lines(split_lines(text)))
        if line:
            result.error = (f"not analysed: an expression nests more than {MAX_DEPTH} levels deep", line, None)
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


def _plan(text: str, names: tuple[str, ...], tree: ast.Module, reduce: bool, memo: TextMemo | None) -> Plan:
    lines = split_lines(text)
    offsets = Lines(lines)
    body = tree.body
    words = set(names)
    occ = _occurrence_lines(text, words, offsets)
    aliases: set[str] = set()
    used = _scan([s for s in body if touches(s, occ)], occ, words, aliases)
    aliases -= words
    alias_occ: list[int] = []
    if aliases:
        alias_occ = _occurrence_lines(text, aliases, offsets)
        used = _scan([s for s in body if touches(s, alias_occ)], alias_occ, aliases, None) or used
    if not used:
        return Plan(True, "", 0, len(body))
    everything = Plan(False, text, len(body), len(body), [first for first, _ in groups(body)[1]])
    if not reduce:
        return everything
    reduced = _reduce(text, lines, offsets, body, sorted(set(occ) | set(alias_occ)), words | aliases, memo)
    if reduced is None:
        return everything
    reduced_text, kept, starts = reduced
    return Plan(False, reduced_text, kept, len(body), starts)


def _occurrence_lines(text: str, words: set[str], lines: Lines) -> list[int]:
    if not words:
        return []
    pattern = word_pattern(words)
    return sorted({lines.line_of(m.start()) for m in pattern.finditer(text)})


def _scan(roots: list[ast.AST], occ: list[int], words: set[str], aliases: set[str] | None) -> bool:
    """True if a word in ``words`` is used (see gate 2) on one of the ``occ`` lines.

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
            if everything or touches(child, occ):
                stack.append((child, False, everything))
    return used


def _member_starts(body: list[ast.stmt]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for stmt in body:
        if isinstance(stmt, ast.ClassDef) and stmt.body and stmt.body[0].lineno > stmt.lineno:
            out[first_line(stmt)] = [first for first, _ in groups(stmt.body)[1]]
    return out


def _kept(body: list[ast.stmt], starts: list[int]) -> list[ast.stmt]:
    firsts = set(starts)
    return [s for group, (first, _) in zip(*groups(body)) if first in firsts for s in group]
