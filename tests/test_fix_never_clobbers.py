"""``--fix`` never loses an edit: another program's save, the file's owner and extended attributes
survive, and a full disk leaves no temporary file behind.

The faults are real: a second process saves the file while cg-lint is fixing it (it waits for
cg-lint to finish reading through inotify, so the timing is the kernel's, not a sleep), cg-lint
runs as another user than the file's owner, the file carries real extended attributes, and the
disk is a real full tmpfs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import shutil
import stat
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cg_lint.fixes import CHANGED_ON_DISK, WriteError, write_atomic
from test_faults_lint import fixed, one_line_errors, source

ROOT = Path(__file__).resolve().parent.parent
TEMP_SUFFIX = ".cg-lint.tmp"
IN_CLOSE_NOWRITE = 0x10


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **extra}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "cg_lint", "--no-cache", "--isolated", *args]


def leftovers(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*") if p.name.endswith((TEMP_SUFFIX, ".tmp")))


@contextlib.contextmanager
def reads_of(path: Path) -> Iterator[int]:
    """An inotify descriptor reporting each time a reader closes ``path``."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(path), IN_CLOSE_NOWRITE) < 0:
        pytest.skip("inotify is not available")
    try:
        yield fd
    finally:
        os.close(fd)


def wait_for_reads(fd: int, count: int, proc: subprocess.Popen) -> None:
    seen = 0
    while seen < count:
        assert proc.poll() is None, "cg-lint ended before reading the file again"
        if select.select([fd], [], [], 1.0)[0]:
            data = os.read(fd, 4096)
            offset = 0
            while offset < len(data):
                _wd, mask, _cookie, size = struct.unpack_from("iIII", data, offset)
                offset += 16 + size
                seen += bool(mask & IN_CLOSE_NOWRITE)


def test_a_save_by_another_program_during_the_fix_is_kept(tmp_path: Path) -> None:
    """cg-lint reads the file (the walk, then the fix); an editor saves it while the fixes are
    computed, keeping its size and putting back its modification time (``touch -r``)."""
    target = tmp_path / "model.py"
    target.write_text(source(150))  # ~1 s of fixing: the save lands well inside it
    theirs = source(150).replace("y = x * w + 0", "y = w * x + 0")
    assert len(theirs) == len(source(150))
    with reads_of(target) as events:
        proc = subprocess.Popen(command("--fix", "-q", str(target)), env=_env(), stderr=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            wait_for_reads(events, 2, proc)  # the walk's read, then the fixer's
            before = target.stat()
            with open(target, "r+") as fh:  # written in place, as many editors do
                fh.write(theirs)
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
            out, err = proc.communicate(timeout=300)
        finally:
            proc.kill()
    assert target.read_text() == theirs  # the editor's save, not cg-lint's fix of the old text
    assert proc.returncode == 2
    proc.stderr = err
    assert one_line_errors(proc) == [f"{target}: error: cannot write the fixes: {CHANGED_ON_DISK}"]
    assert leftovers(tmp_path) == []


def test_content_is_compared_not_only_the_stat(tmp_path: Path) -> None:
    """The last check reads the file: a change its stat cannot show (same size, same times, within
    one clock tick) is still refused."""
    target = tmp_path / "model.py"
    target.write_bytes(b"theirs = 1\n")
    with pytest.raises(WriteError, match="changed on disk"):
        write_atomic(str(target), b"fixed = 1\n", expected=target.stat(), original=b"mine__ = 1\n")
    assert target.read_bytes() == b"theirs = 1\n"
    assert leftovers(tmp_path) == []
    write_atomic(str(target), b"fixed = 1\n", expected=target.stat(), original=b"theirs = 1\n")
    assert target.read_bytes() == b"fixed = 1\n"


def test_extended_attributes_and_acls_survive(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    target.write_text(source(1))
    try:
        os.setxattr(target, "user.origin", b"https://example.org/model.py")
    except OSError:
        pytest.skip("this file system has no user extended attributes")
    acl = shutil.which("setfacl") and subprocess.run(
        ["setfacl", "-m", "u:65534:r", str(target)], capture_output=True).returncode == 0
    target.chmod(0o640)
    before = {name: os.getxattr(target, name) for name in os.listxattr(target)}
    proc = subprocess.run(command("--fix", "-q", str(target)), env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == fixed(source(1))
    assert {name: os.getxattr(target, name) for name in os.listxattr(target)} == before
    if acl:
        assert "system.posix_acl_access" in before
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert leftovers(tmp_path) == []


def _without_chown() -> None:
    """Drop CAP_CHOWN from the bounding set: the exec'ed root process cannot give files away, as
    any other user cannot (a no-op for other users)."""
    if os.geteuid() != 0:
        return
    if ctypes.CDLL(None, use_errno=True).prctl(24, 0, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_CHOWN
        os._exit(99)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_an_owner_that_cannot_be_kept_refuses_the_write(tmp_path: Path) -> None:
    """Another user's world-writable file, fixed by someone who may not give files away: the
    rename would have made the fixer its owner."""
    target = tmp_path / "model.py"
    target.write_text(source(1))
    target.chmod(0o666)
    os.chown(target, 65534, 65534)
    proc = subprocess.run(command("--fix", "-q", str(target)), env=_env(), capture_output=True, text=True,
                          timeout=300, preexec_fn=_without_chown)
    assert proc.returncode == 2, proc.stderr
    assert one_line_errors(proc) == [f"{target}: error: cannot write the fixes: cannot keep the file's owner "
                                     "(65534:65534) in a rewritten copy; the file is unchanged"]
    assert target.read_text() == source(1) and (target.stat().st_uid, target.stat().st_gid) == (65534, 65534)
    assert leftovers(tmp_path) == []


def test_a_full_disk_leaves_no_temporary_file_of_the_fix_or_the_cache(tmp_path: Path) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                                           capture_output=True, timeout=60).returncode != 0:
        pytest.skip("needs root and a tmpfs mount")
    try:
        target = mount / "model.py"
        target.write_text(source(1, padding=20_000))
        (mount / "filler").write_bytes(b"x" * 30_000)  # what is left holds neither copy nor entry
        original = target.read_bytes()
        proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", "--fix", "-q", str(target)],
                              env=_env(CG_LINT_CACHE_DIR=str(mount / "cache")), capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2
        assert one_line_errors(proc) == [
            f"{target}: error: cannot write the fixes: No space left on device (the file is unchanged)"]
        assert target.read_bytes() == original
        assert leftovers(mount) == []
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True, timeout=60)
