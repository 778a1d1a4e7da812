"""The process bookkeeping on real processes: a tree with setsid escapes and a fork loop is found
and killed whole; sizes parse. No TensorFlow."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from runtime_check import supervisor

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A process that leaves behind: a child in its own session whose parent exited (a double-forked
# daemon), a plain child, and a child that forks again and again.
TREE = textwrap.dedent("""
    import os, sys, time
    token = sys.argv[1]
    def sleeper():
        code = "import time\\nwhile True: time.sleep(1)"
        os.execv(sys.executable, [sys.executable, "-c", code, token])
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            sleeper()
        os._exit(0)
    if os.fork() == 0:
        sleeper()
    if os.fork() == 0:
        while True:  # a fork loop: each round's child keeps forking
            if os.fork() == 0:
                continue
            time.sleep(0.05)
    print("started", flush=True)
    while True:
        time.sleep(1)
""")


def _with_token(token: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if token.encode() in handle.read():
                        found.append(int(name))
            except OSError:
                pass
    return found


def test_kill_tree_reaches_setsid_escapes_and_fork_loops():
    before = supervisor.orphans([])  # children this test process already had: not ours to kill
    was_subreaper = supervisor.become_subreaper()
    assert was_subreaper  # Linux: the escapes below re-parent to this test process
    token = f"cg-tree-{uuid.uuid4().hex}"
    root = subprocess.Popen(
        [sys.executable, "-c", TREE, token],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "started"
        tree = supervisor.descendants(root.pid) | supervisor.orphans([root.pid])
        assert len(_with_token(token)) >= 2, "the sleepers are running"
        assert tree, "the tree has members"
        supervisor.kill_tree(root.pid)
        root.wait(timeout=60)
        supervisor.sweep_orphans(before)  # the daemon, re-parented to us when its parent exited
        for _ in range(100):  # SIGKILL is asynchronous: give the kernel a moment to tear down
            if not _with_token(token):
                break
            time.sleep(0.05)
        assert _with_token(token) == []
        assert supervisor.descendants(root.pid) == set()
    finally:
        if root.poll() is None:
            supervisor.kill_tree(root.pid)
            root.wait()
        supervisor.sweep_orphans(before)
        supervisor.stop_being_subreaper()  # the rest of the suite runs in a plain process again


@pytest.mark.parametrize(
    "text, size",
    [("512M", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29), ("4096", 4096), ("64k", 64 << 10)],
)
def test_parse_size(text: str, size: int):
    assert supervisor.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "12Q", "-1G", "0", "G"])
def test_parse_size_rejects(text: str):
    with pytest.raises(ValueError):
        supervisor.parse_size(text)


@pytest.mark.parametrize("size, text", [(1500 << 20, "1500M"), (2 << 30, "2G"), (3 << 29, "1536M")])
def test_format_size_is_exact(size: int, text: str):
    assert supervisor.format_size(size) == text
