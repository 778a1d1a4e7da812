"""Bounds on what the client's byte stream can make the server hold.

pygls reads a header line with ``readline()`` and a body with ``read(Content-Length)``: a header
line without an end, or a ``Content-Length: 99999999999``, is a request for that much memory
(``read`` allocates its buffer up front: MemoryError). This reader gives pygls header lines of at
most ``MAX_HEADER_LINE`` bytes (a longer one arrives in pieces, none of which is a header pygls
knows) and never reads a body over ``MAX_MESSAGE_BYTES``: such a body is read and thrown away in
bounded pieces, so a correctly framed stream stays in step and the server keeps serving, and pygls
gets a ``$/cg-lint/skippedMessage`` notification in its place, which the server reports to the
client. A length the stream never delivers ends in end of file: the server exits as when the
client goes away.
"""

from __future__ import annotations

import json
from typing import BinaryIO

MAX_HEADER_LINE = 64 * 1024
# a 50 MB file, JSON-escaped, fits (it is then turned away by max-file-size, with a diagnostic)
MAX_MESSAGE_BYTES = 128 * 1024 * 1024
SKIPPED_METHOD = "$/cg-lint/skippedMessage"
_PIECE = 1 << 20


class BoundedReader:
    """What pygls reads stdin through (``readline`` and ``read``)."""

    def __init__(self, raw: BinaryIO, max_message: int = MAX_MESSAGE_BYTES) -> None:
        self.raw = raw
        self.max_message = max_message

    def readline(self) -> bytes:
        return self.raw.readline(MAX_HEADER_LINE)

    def read(self, n: int) -> bytes:
        if n <= self.max_message:
            return self.raw.read(n)
        remaining = n
        while remaining:
            piece = self.raw.read(min(remaining, _PIECE))
            if not piece:
                return b""  # the stream ended inside the body: pygls stops, the server exits
            remaining -= len(piece)
        return json.dumps({"jsonrpc": "2.0", "method": SKIPPED_METHOD,
                           "params": {"bytes": n, "limit": self.max_message}}).encode()
