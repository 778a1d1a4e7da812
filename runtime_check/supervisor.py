"""Process bookkeeping for runtime-check: find and stop every process a checked module started.

User code may fork, start a new session (``setsid``) and double-fork into a daemon; a process
group kill misses all of those. Both the parent and each worker therefore become *child
subreapers* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): an orphaned descendant is re-parented to
the nearest living subreaper instead of to init, so walking ``/proc`` by parent pid from a worker
finds everything it started, and anything left over after a worker died is a child of the parent.
Trees are frozen (SIGSTOP) until no new member appears, then killed (SIGKILL), so a process that
keeps forking cannot outrun the kill. Elsewhere than Linux these helpers degrade to the process
group kill.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterable

from cg_lint.processes import PR_SET_CHILD_SUBREAPER, prctl

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (and so can be found)."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def stop_being_subreaper() -> bool:
    return prctl(PR_SET_CHILD_SUBREAPER, 0)


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) for every process visible in /proc."""
    table: dict[int, tuple[int, str]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                raw = handle.read().decode("ascii", "replace")
        except OSError:
            continue  # gone meanwhile
        fields = raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces and ')'
        if len(fields) >= 2:
            table[int(name)] = (int(fields[1]), fields[0])
    return table


def descendants(root: int, table: dict[int, tuple[int, str]] | None = None) -> set[int]:
    """Every process whose parent chain reaches ``root`` (``root`` excluded)."""
    table = process_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_tree(root: int, include_root: bool = True, keep: Iterable[int] = ()) -> set[int]:
    """Freeze, then kill ``root``'s group and every descendant (except ``keep``).

    Returns the pids that were signalled. Children of this process among them are reaped.
    """
    keep = set(keep)
    if include_root:
        with contextlib.suppress(OSError):
            os.killpg(root, signal.SIGSTOP)  # the worker's own group, in one call
    stopped: set[int] = set()
    for _ in range(50):  # each round stops what the previous round could still have forked
        table = process_table()
        targets = descendants(root, table) - keep
        if include_root and root in table:
            targets.add(root)
        new = targets - stopped
        if not new:
            break
        _signal_all(new, signal.SIGSTOP)
        stopped |= new
    _signal_all(stopped, signal.SIGKILL)
    if include_root:
        with contextlib.suppress(OSError):
            os.killpg(root, signal.SIGKILL)
    reap(stopped - {root}, dying={root} if include_root else ())
    return stopped


def reap(pids: Iterable[int], dying: Iterable[int] = ()) -> None:
    """Collect the exit status of ``pids`` (just killed) that are, or become, our children.

    A killed grandchild is re-parented to this subreaper only once its own parent is gone, so
    keep waiting (briefly: they were sent SIGKILL) while one still hangs below another, or below
    one of ``dying`` (killed too, and reaped elsewhere)."""
    me, pending, dying = os.getpid(), set(pids), set(dying)
    for _ in range(100):
        table = process_table()
        pending &= set(table)
        if not pending:
            return
        mine = {pid for pid in pending if table[pid][0] == me}
        for pid in mine:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        pending -= mine
        if not any(
            table[pid][0] in pending | dying and table.get(table[pid][0], (0, "Z"))[1] != "Z"
            for pid in pending
        ):
            return  # the rest belong to someone else (their parent, or init, reaps them)
        time.sleep(0.005)


def orphans(workers: Iterable[int]) -> set[int]:
    """Children of this process that are not ``workers``: re-parented leftovers of dead workers."""
    me, workers = os.getpid(), set(workers)
    table = process_table()
    return {pid for pid, (ppid, _state) in table.items() if ppid == me and pid not in workers}


def sweep_orphans(workers: Iterable[int]) -> set[int]:
    """Kill every leftover (with its own descendants) re-parented to this subreaper."""
    killed: set[int] = set()
    for _ in range(10):
        leftovers = orphans(workers) - killed
        if not leftovers:
            break
        for pid in leftovers:
            killed |= kill_tree(pid)
    return killed


def tree_rss(root: int) -> int:
    """Resident memory in bytes of ``root`` and all its descendants."""
    total = 0
    for pid in {root} | descendants(root):
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            pass
    return total


def virtual_size() -> int | None:
    """This process's virtual memory size in bytes (None where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1.5GiB`` or a number of bytes; ValueError on anything else."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"invalid size '{text}' (expected e.g. 512M or 2G)")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1 or value > 1 << 50:
        raise ValueError(f"invalid size '{text}' (expected e.g. 512M or 2G)")
    return int(value)


def format_size(size: int) -> str:
    """The largest unit that shows ``size`` exactly (1500M stays 1500M), else megabytes."""
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size / (1 << 20):.1f}M" if size >= 1 << 20 else f"{size}B"
