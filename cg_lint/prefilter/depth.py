"""Keep libcst away from expressions it cannot survive.

libcst's native parser overflows the C stack (a segfault, which no ``except`` catches) on
expressions nested some thousands deep, and its time grows quadratically long before that (a sum of
1,000 terms takes ~0.3 s, 3,000 about 4 s). CPython's parser handles far deeper ones, so its ``ast``
is where the depth is measured.
"""

from __future__ import annotations

import ast

from cg_lint.prefilter.lines import Lines, first_line

MAX_DEPTH = 1000
# libcst keeps a chained comparison flat, but every rule that shows or walks it pays per term
# (~0.2 ms: 100,000 terms took 20 s); no real comparison comes near this
MAX_COMPARISON_TERMS = 1000
# lines that use a custom-gradient marker: each definition costs a few ms to model and check
# (50,000 in one file took 347 s); the largest real file seen has a few dozen
MAX_DEFINITIONS = 2000


def too_complex(stmts: list[ast.stmt], text: str, lines: Lines) -> tuple[int, str] | None:
    """``(line, why)`` for the first statement libcst or the analysis cannot afford, else None."""
    for stmt in stmts:
        if _chars(stmt, lines) < MAX_DEPTH:
            continue  # most statements: too short to nest that deep, not worth a walk
        why = _too_deep(stmt, text, lines)
        if why:
            return stmt.lineno, why
    return None


def too_deep(stmts: list[ast.stmt], text: str, lines: Lines) -> int:
    """First line of a statement holding an expression libcst would nest deeper than MAX_DEPTH, else 0.

    An expression cannot nest deeper than its length in characters, so only long ones are walked.
    libcst nests what ``ast`` keeps flat in two places: ``a or b or c`` and implicit string
    concatenation (``"a" "b" "c"``); both are counted.
    """
    for stmt in stmts:
        if _chars(stmt, lines) < MAX_DEPTH:
            continue  # most statements: too short to nest that deep, not worth a walk
        if _too_deep(stmt, text, lines):
            return stmt.lineno
    return 0


_DEEP = f"an expression nests more than {MAX_DEPTH} levels deep"
_CHAIN = f"a comparison chains more than {MAX_COMPARISON_TERMS} terms"


def _chars(stmt: ast.stmt, lines: Lines) -> int:
    """Characters from a statement's first line (decorators included) to the end of its last."""
    return lines.end_of(stmt.end_lineno or stmt.lineno) - lines.starts[first_line(stmt) - 1]


def _too_deep(stmt: ast.stmt, text: str, lines: Lines) -> str:
    """Why the statement is too much for libcst or the analysis ('' when it is not)."""
    stack: list[tuple[ast.AST, int]] = [(stmt, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return _DEEP
        if type(node) is ast.Compare and len(node.comparators) >= MAX_COMPARISON_TERMS:
            return _CHAIN
        if isinstance(node, ast.stmt):  # nested blocks, like nested expressions, take characters
            if depth + _chars(node, lines) <= MAX_DEPTH:
                continue
        elif isinstance(node, ast.expr):
            if node.end_lineno == node.lineno:
                size = (node.end_col_offset or 0) - node.col_offset  # bytes >= characters
            else:
                size = lines.end_of(node.end_lineno or node.lineno) - lines.starts[node.lineno - 1]
            if depth + size <= MAX_DEPTH:
                continue
            if isinstance(node, ast.BoolOp):
                depth += len(node.values)
            elif (isinstance(node, (ast.Constant, ast.JoinedStr))
                  and _string_parts(node, text, lines) + depth > MAX_DEPTH):
                return _DEEP
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    return ""


def _string_parts(node: ast.expr, text: str, lines: Lines) -> int:
    """How many literals make up a (long) string constant: libcst nests each one."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return 1
    segment = text[lines.starts[node.lineno - 1]:lines.end_of(node.end_lineno or node.lineno)]
    if (segment.count('"') + segment.count("'")) // 2 <= MAX_DEPTH // 2:
        return 1  # too few quotes for that many literals (a long docstring)
    import io
    import tokenize

    try:
        return sum(1 for t in tokenize.generate_tokens(io.StringIO(segment).readline)
                   if t.type == tokenize.STRING or t.type == getattr(tokenize, "FSTRING_START", -1))
    except (tokenize.TokenError, SyntaxError):
        return MAX_DEPTH + 1
