"""The helper's messages: a 4-byte big-endian length, then that many bytes of JSON (an object).

Both sides bound what they read (``MAX_MESSAGE``) and time out, so neither a silent nor a flooding
peer can hold the other. Settings travel as their dataclass fields; the receiver rebuilds them and
checks that they key the result cache the same way as the sender's (every field that can change
findings), so a field that does not survive the trip is a refusal, never a different answer.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cg_lint.config import Settings

MAX_MESSAGE = 64 << 20  # a request holds one source file, which max-file-size bounds far below this
_LENGTH = struct.Struct(">I")


class WireError(Exception):
    """The peer went away, timed out, or sent what is not a message."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("ascii")  # lone surrogates as \\udxxx
    if len(data) > MAX_MESSAGE:
        raise WireError("message too large")
    try:
        sock.sendall(_LENGTH.pack(len(data)) + data)
    except OSError as e:
        raise WireError(str(e)) from None


def receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size))
    if size > MAX_MESSAGE:
        raise WireError("message too large")
    try:
        message = json.loads(_exactly(sock, size))
    except (ValueError, RecursionError):
        raise WireError("not JSON") from None
    if not isinstance(message, dict):
        raise WireError("not an object")
    return message


def _exactly(sock: socket.socket, size: int) -> bytes:
    parts = []
    while size:
        try:
            part = sock.recv(min(size, 1 << 20))
        except OSError as e:  # a timeout included
            raise WireError(str(e) or type(e).__name__) from None
        if not part:
            raise WireError("connection closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def settings_to_json(settings: Settings) -> dict[str, Any]:
    """Every field but ``runtime`` (runtime-check's table, which linting never reads)."""
    return {f.name: _plain(getattr(settings, f.name)) for f in fields(settings) if f.name != "runtime"}


def settings_from_json(data: Any) -> Settings:
    """The settings ``settings_to_json`` gave; ValueError when ``data`` is not their shape."""
    from cg_lint.config import Settings

    if not isinstance(data, dict):
        raise ValueError("settings: not an object")
    kwargs: dict[str, Any] = {}
    defaults = Settings()
    for f in fields(Settings):
        if f.name == "runtime" or f.name not in data:
            continue
        value, default = data[f.name], getattr(defaults, f.name)
        if isinstance(default, frozenset):
            value = frozenset(value)
        elif isinstance(default, tuple):
            value = _tuples(value)
        kwargs[f.name] = value
    return Settings(**kwargs)


def _plain(value: Any) -> Any:
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
