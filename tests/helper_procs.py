"""The flake8 helper processes the tests start, found in ``/proc`` by their environment: each test
gives its helpers a runtime folder of its own (``runtime_dir``), and every process this test
process starts carries ``SESSION`` (set by conftest), so a helper that escaped to another folder is
found too. No other helper (a user's own, another test run's) is ever touched."""

from __future__ import annotations

import contextlib
import os
import signal
import time

HELPER_PREFIX = f"/tmp/cg-h{os.getpid()}-"
SESSION = ("CG_LINT_TEST_SESSION", f"{os.getpid()}-{time.time_ns()}")


def runtime_dir(prefix: str) -> bytes:
    return f"XDG_RUNTIME_DIR={prefix}".encode()


def session() -> bytes:
    return f"{SESSION[0]}={SESSION[1]}\0".encode()


def helper_pids(match: bytes) -> list[int]:
    """Helper processes with an environment entry that starts with ``match`` (``runtime_dir``,
    ``session``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if b"cg_lint.helper.daemon" not in f.read():
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        if any((v + b"\0").startswith(match) for v in env):
            found.append(int(entry))
    return found


def stop_helpers(match: bytes, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL what is left after ``timeout``, each helper ``helper_pids`` finds."""
    for pid in helper_pids(match):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while helper_pids(match) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in helper_pids(match):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
