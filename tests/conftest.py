from __future__ import annotations

import signal
import textwrap
from pathlib import Path

import pytest

# Under nohup, or `&` in a non-interactive shell, SIGINT (and with nohup SIGHUP) arrive ignored and
# every child inherits that, so the tests that stop a child with them would see it run on. A signal
# this process catches is reset to its default in a child at exec: catch them here, harmlessly.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda signum, frame: None)  # still no hang-up for the run itself


@pytest.fixture
def write(tmp_path: Path):
    """Write a dedented source file under tmp_path and return its path."""

    def _write(name: str, source: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            path.write_bytes(source)
        else:
            path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return _write
