"""The flake8 helper processes the tests start: each test gives its helpers a runtime folder named
with ``HELPER_PREFIX`` (this test process's id), so they can be found in ``/proc`` and stopped, and
no other helper (a user's own) is ever touched."""

from __future__ import annotations

import contextlib
import os
import signal
import time

HELPER_PREFIX = f"/tmp/cg-h{os.getpid()}-"


def helper_pids(prefix: str) -> list[int]:
    """Helper processes whose XDG_RUNTIME_DIR starts with ``prefix``."""
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
        if any(v.startswith(b"XDG_RUNTIME_DIR=" + prefix.encode()) for v in env):
            found.append(int(entry))
    return found


def stop_helpers(prefix: str, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL what is left after ``timeout``, each helper under ``prefix``."""
    for pid in helper_pids(prefix):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while helper_pids(prefix) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in helper_pids(prefix):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
