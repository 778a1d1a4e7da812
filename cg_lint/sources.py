"""Reading source files as Python does (BOM, PEP 263 cookie, else UTF-8), for every frontend.

Kept apart from the engine so that runtime-check can show source lines without importing libcst.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable

from cg_lint.findings import FileError


def decode(data: bytes, path: str) -> str | FileError:
    """Decode like Python does (BOM, PEP 263 cookie, else UTF-8); one clear line on failure."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:
        # detect_encoding fails on undecodable bytes in the first two lines: say where, like below
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as u:
            return FileError(path, f"cannot decode as utf-8 at byte {u.start}: not a text file in that encoding")
        return FileError(path, f"cannot decode: {getattr(e, 'msg', e)}")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as e:
        where = f" at byte {e.start}" if isinstance(e, UnicodeDecodeError) else ""
        return FileError(path, f"cannot decode as {encoding}{where}: not a text file in that encoding")
    return text.removeprefix("\ufeff")


# Python ends lines at \r\n, \r or \n only; str.splitlines also splits at \f, \v, \x1c-\x1e, \x85,
# \u2028 and \u2029, which would move every later line of a file holding one
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """``text.splitlines()`` as Python numbers lines (a form feed does not end one)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def lines_of(data: bytes, path: str) -> list[str]:
    """Decoded lines for showing findings in context; [] when the bytes do not decode."""
    text = decode(data, path)
    return [] if isinstance(text, FileError) else split_lines(text)


def read_lines(paths: Iterable[str]) -> dict[str, list[str]]:
    """``lines_of`` each readable file."""
    out: dict[str, list[str]] = {}
    for path in set(paths):
        try:
            with open(path, "rb") as fh:
                out[path] = lines_of(fh.read(), path)
        except OSError:
            continue
    return out
