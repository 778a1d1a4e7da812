"""Reading source files as Python does (BOM, PEP 263 cookie, else UTF-8), for every frontend.

Kept apart from the engine so that runtime-check can show source lines without importing libcst.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from cg_lint.findings import FileError
from cg_lint.safe_read import Unreadable, read_bytes, special_kind


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
    """``lines_of`` each readable regular file."""
    out: dict[str, list[str]] = {}
    for path in set(paths):
        data = read_regular(path)
        if isinstance(data, bytes):
            out[path] = lines_of(data, path)
    return out


_CHUNK = 1 << 20


def read_regular(path: str, limit: int | None = None) -> bytes | FileError:
    """The bytes of a regular file, or one line saying why not (``cg_lint/safe_read.py``: never
    blocks on a FIFO or a device). ``limit``: larger files are not read (``FileTooLarge``)."""
    try:
        return read_bytes(path, limit)
    except Unreadable as e:
        if e.size is not None and limit is not None:
            return too_large(path, e.size, limit)
        return FileError(path, e.message)


@dataclass(frozen=True)
class FileTooLarge(FileError):
    """A regular file over the size limit (the caller decides whether it matters: see ``mentions``)."""

    size: int = 0


def too_large(path: str, size: int, limit: int) -> FileTooLarge:
    return FileTooLarge(path, f"file too large to check ({_mb(size)} > {_mb(limit)} limit)", size=size)


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def mentions(path: str, markers: tuple[str, ...]) -> bool | FileError:
    """Whether a (large) regular file contains one of ``markers``, read in bounded memory."""
    needles = [m.encode() for m in markers]
    keep = max(len(n) for n in needles) - 1
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        return FileError(path, f"cannot read: {e.strerror or e}")
    try:
        if special_kind(os.fstat(fd).st_mode) is not None:
            return False
        tail = b""
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return False
            window = tail + chunk
            if any(n in window for n in needles):
                return True
            tail = window[-keep:] if keep else b""
    except OSError as e:
        return FileError(path, f"cannot read: {e.strerror or e}")
    finally:
        os.close(fd)
