"""The one reader of files cg-lint did not write itself: sources, configuration, cache entries.

Kept free of the findings module (dataclasses cost milliseconds to create) so that the result
cache's hit path, which reads through it too, stays cheap.
"""

from __future__ import annotations

import os
import stat

# Candidates bigger than this are not checked (one line says so): linting costs about 4 s and
# 280 MB per MB of candidate source (a 10 MB one took 43 s and 2.8 GB; the largest real file
# holding a custom gradient in TensorFlow, Keras and TFP is 0.18 MB). Bigger files are only searched,
# in bounded memory, for the markers: one that cannot hold a custom gradient is no error.
# ``max-file-size`` in [tool.cg_lint] changes it.
MAX_FILE_BYTES = 2 * 1024 * 1024


class Unreadable(Exception):
    """Why a path was not read (one line); ``size`` when it was a regular file over the limit."""

    def __init__(self, message: str, size: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.size = size


def special_kind(mode: int) -> str | None:
    """What a non-regular file is, for the one line that says it was skipped."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file, else ``Unreadable``. Never blocks on a FIFO or a device
    (checked before opening, opened non-blocking, and checked again on the open file, so a file
    swapped in between is caught). ``limit``: larger files are not read (``Unreadable.size``)."""
    try:
        kind = special_kind(os.stat(path).st_mode)
        if kind is not None:
            raise Unreadable(f"not a regular file ({kind})")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise Unreadable(f"not a regular file ({kind})")
        if limit is not None and st.st_size > limit:
            raise Unreadable("too large", st.st_size)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read() if limit is None else fh.read(limit + 1)
        if limit is not None and len(data) > limit:  # grew since the fstat
            raise Unreadable("too large", len(data))
        return data
    except OSError as e:
        raise Unreadable(f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
