"""Linux process controls both tools' worker pools use (``prctl``); no-ops elsewhere."""

from __future__ import annotations

import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where it is not available or refused."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # only in the workers that ask: not on cg-lint's start-up path

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def parse_jobs(value: str) -> int | None:
    """``-j``/``--jobs`` of both tools (an argparse ``type``): a positive number, or ``auto`` or
    ``0`` (pylint's spelling) for one worker per core (None)."""
    if value.strip().lower() == "auto":
        return None
    try:
        jobs = int(value)
    except ValueError:
        jobs = -1
    if jobs < 0:
        import argparse

        raise argparse.ArgumentTypeError(f"'{value}' is not a number of jobs (a positive integer, 0 or auto)")
    return jobs or None


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """This process gets ``sig`` when its parent dies (even by SIGKILL)."""
    return prctl(PR_SET_PDEATHSIG, int(sig))
