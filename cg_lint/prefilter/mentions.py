"""Gate 1b: files that only *mention* a marker, told apart without parsing.

Most files that contain ``custom_gradient`` cannot define one: TensorFlow's generated ``__init__``
files re-export it, error messages and docstrings name it, a backend defines ``class
custom_gradient``. ``ast.parse`` proves that (gate 2) but costs as much as the rest of the file's
analysis. A regular-expression lexer finds comments and string literals in one pass; when every
occurrence of every marker is inside one, on a plain import line, names a def or class, or is the
base of an attribute (``custom_gradient.generate_name()``), no use is possible and the file is
skipped. Anything else (an f-string, an ``import ... as`` alias, a backslash continuation, text the
lexer cannot follow) goes on to the ``ast``. Every answer here implies gate 2's answer;
``tests/test_prefilter.py`` and ``bench/verify_reduction.py`` check that on real trees.
"""

from __future__ import annotations

import re

from cg_lint.prefilter.lines import word_pattern

# Comments, then string literals (their prefix is read separately); triple quotes before single ones. Escapes are
# skipped pairwise, which is also right for raw strings (`r"\""` does not end at the second quote);
# the loops are unrolled (`[^"\\]*(?:...)*`) so the engine does not step one character at a time.
_LEXEME = re.compile(
    r"#[^\r\n]*"
    r'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\r\n]*(?:\\.[^"\\\r\n]*)*"'
    r"|'[^'\\\r\n]*(?:\\.[^'\\\r\n]*)*'",
    re.S,
)
# the letters right before a quote, when they are a whole word: a string prefix (`rb`, `f`, `u`)
_PREFIX = re.compile(r"(?<!\w)[A-Za-z]{1,2}\Z")
_QUOTES = ('"', "'")
# longer files go straight to the ast: a pathological (unterminated) triple quote makes lazy
# matching quadratic, and long files are rare among candidates
MAX_CHARS = 2_000_000


def only_mentions(text: str, names: tuple[str, ...]) -> bool:
    """True when no occurrence of ``names`` in ``text`` can be a use (see the module docstring)."""
    if len(text) > MAX_CHARS or "\\\n" in text or "\\\r" in text:
        return False  # backslash continuations: lines are not logical lines
    pattern = word_pattern(names)
    unresolved = [pos for pos in (m.start() for m in pattern.finditer(text)) if not _on_its_line(text, pos, pattern)]
    if not unresolved:
        return True
    inert = _inert_spans(text, unresolved[0], unresolved[-1])
    if inert is None:
        return False
    i = 0
    for pos in unresolved:
        while i < len(inert) and inert[i][1] <= pos:
            i += 1
        if not (i < len(inert) and inert[i][0] <= pos):
            return False  # code that is not one of the harmless forms
    return True


def _on_its_line(text: str, pos: int, pattern: re.Pattern[str]) -> bool:
    """An occurrence its line alone shows to be no use, whether the line is code or lies inside a
    triple-quoted string (then it is no use either)."""
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    column = pos - line_start
    if _harmless_code(line, column, pattern):
        return True
    if '"""' in line or "'''" in line:
        return False  # a triple-quoted string may end on this line: only the whole text tells
    # no triple quote: the line starts in code (lexed exactly from here) or inside a string
    spans = _inert_spans(line, column, column)
    return spans is not None and any(a <= column < b for a, b in spans)


def _inert_spans(text: str, first: int, last: int) -> list[tuple[int, int]] | None:
    """Comments and non-f string literals from the start of the text to past ``last``, in order;
    None when an f-string reaches ``first`` or beyond."""
    spans: list[tuple[int, int]] = []
    for m in _LEXEME.finditer(text):
        start, end = m.span()
        if text[start] != "#":
            prefix = _PREFIX.search(text, max(0, start - 3), start)
            if prefix is not None and ("f" in prefix.group().lower() or "t" in prefix.group().lower()):
                if end > first:
                    return None  # f-strings hold code; and their nesting is beyond this lexer
                continue
        if end > first:
            spans.append((start, end))
        if start > last:
            break
    return spans


def _harmless_code(line: str, column: int, pattern: re.Pattern[str]) -> bool:
    """A plain import line, a def or class name, or the base of an attribute."""
    before, after = line[:column], line[column:]
    word = pattern.match(after)
    if word is None or ";" in line:
        return False
    rest = after[word.end():]
    if _IMPORT_LINE.match(line):
        # `import ... custom_gradient as cg` binds an alias gate 2 would follow
        return not re.match(r"\s+as\s+(?!" + re.escape(word.group()) + r"\b)", rest)
    if re.fullmatch(r"\s*(?:async\s+)?(?:def|class)\s+", before):
        return True
    return bool(re.match(r"\s*\.\s*[A-Za-z_]", rest)) and not any(q in before for q in _QUOTES)


# one logical line: `import a.b, c` or `from a.b import c, d as e` (an optional comment after it)
_IMPORT_LINE = re.compile(r"\s*(?:import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*"
                          r"|from\s+[\w.]+\s+import\s+\w+(?:\s+as\s+\w+)?(?:\s*,\s*\w+(?:\s+as\s+\w+)?)*)"
                          r"\s*(?:#.*)?\r?$")
