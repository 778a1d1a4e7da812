"""Form feeds in indentation: what CPython accepts, made acceptable to libcst.

CPython's tokenizer resets the indentation column at a form feed (``\\f``), so ``\\f    return x``
is indented by four. libcst's tokenizer drops the form feed from the tree (its positions then
point one character early on that line, which once turned ``return x, y, grad`` into
``return(x, y), gradd``) and rejects some such files outright (``no matching outer block for
dedent``). Before libcst sees a text, each line that starts a logical line loses its leading
whitespace up to and including the last form feed, which is exactly what CPython ignores; the
characters removed per line are kept, and positions add them back (``FileIndex``). Lines inside
strings and continuation lines are left alone (their whitespace is not indentation), so the
expressions a fix regenerates keep every character. The file itself is never changed.
"""

from __future__ import annotations

import io
import re
import token
import tokenize

# a form feed in a line's leading whitespace (any line; tokenize then says which ones count)
_CANDIDATE = re.compile(r"[ \t\f]*\f")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # libcst's and CPython's line breaks
_HAS_CANDIDATE = re.compile(r"(?:^|(?<=[\r\n]))[ \t\f]*\f")
_LINE_ENDS = (token.NEWLINE, token.NL, token.INDENT)


def strip_form_feeds(text: str) -> tuple[str, dict[int, int]]:
    """``(text for libcst, {1-based line: characters removed from its start})``; the text is
    returned as it is (and the map empty) when no indentation holds a form feed."""
    if "\f" not in text or not _HAS_CANDIDATE.search(text):
        return text, {}
    starts = _logical_line_starts(text)
    shifts: dict[int, int] = {}
    lines = _LINE.findall(text)
    for number in starts:
        if number <= len(lines):
            match = _CANDIDATE.match(lines[number - 1])
            if match:
                shifts[number] = match.end()
                lines[number - 1] = lines[number - 1][match.end():]
    return ("".join(lines), shifts) if shifts else (text, {})


def _logical_line_starts(text: str) -> set[int]:
    """Lines whose leading whitespace is indentation: their first token begins a logical line (not
    inside brackets, a string, or after a backslash). Empty when tokenize rejects the text."""
    starts: set[int] = set()
    depth = 0
    previous = token.NEWLINE  # the file's first line begins a logical line
    last_row = 0
    try:
        # universal newlines: rows then count lone \r as CPython and libcst do
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            kind = tok.type
            if kind in (token.DEDENT, token.ENDMARKER):
                continue  # placed on the next token's line, which they do not start
            row = tok.start[0]
            if row > last_row and depth == 0 and previous in _LINE_ENDS:
                starts.add(row)
            if kind == token.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth = max(0, depth - 1)
            previous = kind
            last_row = max(last_row, tok.end[0] if kind not in (token.NEWLINE, token.NL) else row)
    except (tokenize.TokenError, SyntaxError):
        return set()
    return starts
