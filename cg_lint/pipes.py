"""Ending a command whose reader went away (``cg-lint ... | head -1``).

Python ignores SIGPIPE, so a write to a closed pipe raises ``BrokenPipeError``, and the final flush
at exit raises it again (printing "Exception ignored" and exiting 120). Output was lost, so the
status must not say success: we exit as a shell reports a process killed by SIGPIPE (128 + 13),
after pointing the standard streams at ``/dev/null`` so that nothing is flushed into the broken
pipe at exit (Python's documented advice, ``signal`` module, "Note on SIGPIPE").
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from typing import TextIO

EXIT_BROKEN_PIPE = 128 + int(getattr(signal, "SIGPIPE", 13))


def flushed(status: int) -> int:
    """``status`` once everything written so far reached the reader, else ``EXIT_BROKEN_PIPE``.

    Buffered output is otherwise written only at exit, after the status was decided."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BrokenPipeError:
        return broken_pipe()
    return status


def broken_pipe() -> int:
    """Silence the standard streams (their buffers hold output no one reads) and give the status."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    return EXIT_BROKEN_PIPE


def write_all(stream: TextIO, text: str | bytes) -> None:
    """Write ``text`` (bytes as they are) whole, or raise ``BrokenPipeError``.

    A large ``write`` through Python's buffered layer can come back short, without an error, when
    the reader leaves during it (the kernel returns a partial count and the rest is dropped), and
    the status would then claim everything was written: the descriptor is written directly.
    """
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's StringIO)
        if isinstance(text, bytes):
            stream.buffer.write(text)
        else:
            stream.write(text)
        stream.flush()
        return
    stream.flush()
    data = text if isinstance(text, bytes) else text.encode(stream.encoding or "utf-8", stream.errors or "strict")
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:  # a reader that set the pipe non-blocking: wait until it drains
            select.select([], [fd], [])
