"""Apply the ``Fix``es that rules attach to findings, the way ``ruff --fix`` does.

A rule offers a fix by passing ``fix=Fix(title, (Edit(...),), safe=...)`` to ``Rule.finding``
(and setting ``fixable = True``; ``cg_lint.rules.edits`` builds the edits); nothing here knows
about individual rules. :func:`fix_source`
lints, applies every applicable non-overlapping fix, re-lints and repeats until no applicable fix
is left (fixes that overlapped one applied in the same pass get their turn in the next pass).

Positions are libcst's: 1-based lines, 1-based columns counted in characters, end exclusive.
"""

from __future__ import annotations

import difflib
import errno
import io
import contextlib
import os
import re
import stat
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cg_lint.engine import lint_source
from cg_lint.findings import FileError, Finding, Fix
from cg_lint.sources import decode, read_regular

MAX_ITERATIONS = 10
# libcst ends lines at \r\n, \r or \n only (str.splitlines also splits at \f, \x1c, \u2028, ...)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


# --- applying edits to text ------------------------------------------------------------------

def applicable(findings: Iterable[Finding], unsafe: bool = False) -> list[Finding]:
    """Findings whose fix runs under the current setting (safe only, or unsafe too)."""
    return [f for f in findings if f.fix is not None and (f.fix.safe or unsafe)]


def newline_of(text: str) -> str:
    """The file's newline style: that of its first line break (Python's own rule for mixed files)."""
    match = _NEWLINE.search(text)
    return match.group() if match else "\n"


class _Offsets:
    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.length = len(text)

    def offset(self, line: int, column: int) -> int | None:
        if not 1 <= line <= len(self.starts) or column < 1:
            return None
        end = self.starts[line] if line < len(self.starts) else self.length
        offset = self.starts[line - 1] + column - 1
        return offset if offset <= end else None


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (s1, e1), (s2, e2) = a, b
    # same start (two insertions, or an insertion before a replacement) or any shared character;
    # an insertion strictly inside a replaced range conflicts too
    return s1 == s2 or (s1 < e2 and s2 < e1) or s1 < s2 < e1 or s2 < s1 < e2


def apply_fixes(text: str, fixes: Sequence[Fix]) -> tuple[str, list[Fix], list[Fix]]:
    """Apply every fix none of whose edits overlaps an edit already taken.

    Returns ``(new_text, applied, skipped)``; fixes are considered in source order and a fix is
    all-or-nothing. Replacement newlines follow the file's style.
    """
    offsets = _Offsets(text)
    newline = newline_of(text)
    taken: list[tuple[int, int, str]] = []
    applied: list[Fix] = []
    skipped: list[Fix] = []

    def spans(fix: Fix) -> list[tuple[int, int, str]] | None:
        out = []
        for e in fix.edits:
            start, end = offsets.offset(e.start_line, e.start_column), offsets.offset(e.end_line, e.end_column)
            if start is None or end is None or end < start:
                return None
            out.append((start, end, _NEWLINE.sub(newline, e.replacement)))
        return out

    def first(fix: Fix) -> tuple[int, int]:
        return min(((e.start_line, e.start_column) for e in fix.edits), default=(0, 0))

    for fix in sorted(fixes, key=first):
        mine = spans(fix)
        if not mine or any(_conflict(m[:2], t[:2]) for m in mine for t in taken) \
                or any(_conflict(a[:2], b[:2]) for i, a in enumerate(mine) for b in mine[i + 1:]):
            skipped.append(fix)
            continue
        taken.extend(mine)
        applied.append(fix)
    for start, end, replacement in sorted(taken, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, applied, skipped


# --- the fix loop ----------------------------------------------------------------------------

@dataclass
class FixOutcome:
    """What fixing one source did. ``text`` is the fixed source (the input when nothing applied)."""

    path: str
    original: str
    text: str
    fixed: int = 0
    remaining: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    converged: bool = True

    @property
    def changed(self) -> bool:
        return self.text != self.original


def fix_source(text: str, path: str, settings=None, unsafe: bool = False, apply_noqa: bool = True,
               max_iterations: int = MAX_ITERATIONS) -> FixOutcome:
    """Lint, fix, re-lint until no applicable fix is left. Never returns text that fails to parse."""
    outcome = FixOutcome(path, text, text)
    result = lint_source(text, path, settings, apply_noqa=apply_noqa)
    if result.error is not None:
        outcome.error = result.error
        return outcome
    for _ in range(max_iterations):
        todo = applicable(result.findings, unsafe)
        if not todo:
            break
        new, applied, _skipped = apply_fixes(outcome.text, [f.fix for f in todo if f.fix])
        if not applied or new == outcome.text:
            break
        again = lint_source(new, path, settings, apply_noqa=apply_noqa)
        if again.error is not None:
            # a fix that breaks the file is a bug in the fix: keep the last good text and say so
            outcome.error = FileError(path, f"a fix produced invalid code ({again.error.message}); "
                                            "the remaining fixes were not applied (please report this)")
            break
        outcome.text, outcome.fixed, result = new, outcome.fixed + len(applied), again
    else:
        outcome.converged = not applicable(result.findings, unsafe)
    outcome.remaining = result.findings
    return outcome


# --- reading and writing files as they were --------------------------------------------------

@dataclass(frozen=True)
class SourceFile:
    text: str
    encoding: str  # "utf-8-sig" when the file starts with a BOM


def read_source(data: bytes, path: str) -> SourceFile | FileError:
    """Decode like Python does, remembering the encoding (and BOM) to write the file back."""
    text = decode(data, path)
    if isinstance(text, FileError):
        return text
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return SourceFile(text, encoding)


def encode_source(text: str, encoding: str) -> bytes:
    """Newlines are kept as they are in ``text`` (never translated)."""
    return text.encode(encoding)


TEMP_SUFFIX = ".cg-lint.tmp"


class WriteError(OSError):
    """Writing the fixes was refused or failed; ``strerror`` says what happened to the file."""


def write_atomic(path: str, data: bytes, expected: os.stat_result | None = None,
                 original: bytes | None = None) -> None:
    """Replace the file at ``path`` with ``data`` so that it is, at every instant, either the
    original or the complete new content: written to a temporary file in the same folder, given the
    original's mode, owner and extended attributes (ACLs, labels, user attributes), flushed to
    disk, then renamed over the original.

    A symlink is followed (its target is replaced, the link stays). ``expected`` / ``original``:
    the file's ``stat`` and bytes when it was read. Right before the rename the file is read
    again; if it changed (another program saved it meanwhile), nothing is written and
    ``WriteError`` says so, as an editor refuses to overwrite a file changed on disk. Whatever
    cannot be kept (an owner we may not give, an attribute the copy cannot take) refuses the write
    too. On any failure the original is untouched, the temporary file is removed and ``OSError``
    is raised.
    """
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    before = os.stat(target)
    if expected is not None and _identity(before) != _identity(expected):
        raise WriteError(0, CHANGED_ON_DISK)
    if not os.access(target, os.W_OK):  # a rename would replace a file its owner made read-only
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    _remove_stale_temporaries(folder, os.path.basename(target))
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}{TEMP_SUFFIX}")
    fd = _open_unnamed(folder)
    named = False
    try:
        if fd is None:  # no O_TMPFILE here: a named file from the start
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            named = True
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, stat.S_IMODE(before.st_mode))
        _keep_owner(fd, before)
        _keep_xattrs(target, fd)
        os.fsync(fd)
        if not named:
            # the complete, synced file gets a name only now: a kill before this leaves nothing
            _link_unnamed(fd, temporary)
            named = True
        # as late as it can be: what another program saved since we read is never replaced
        if _identity(os.stat(target)) != _identity(before) or (
                original is not None and _read_back(target) != original):
            raise WriteError(0, CHANGED_ON_DISK)
        os.replace(temporary, target)
        named = False
    finally:
        if fd is not None:
            os.close(fd)
        if named:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    _sync_folder(folder)


CHANGED_ON_DISK = "the file changed on disk after it was read; its new content was kept (run again)"


def _read_back(path: str) -> bytes | None:
    data = read_regular(path)
    return data if isinstance(data, bytes) else None


def _keep_owner(fd: int, before: os.stat_result) -> None:
    if not hasattr(os, "fchown") or (before.st_uid, before.st_gid) == _owner(fd):
        return
    try:
        os.fchown(fd, before.st_uid, before.st_gid)
    except OSError:
        # the renamed copy would belong to us: the file's owner would lose it
        raise WriteError(0, f"cannot keep the file's owner ({before.st_uid}:{before.st_gid}) in a "
                            "rewritten copy; the file is unchanged") from None


def _keep_xattrs(source: str, fd: int) -> None:
    """Copy every extended attribute (POSIX ACLs, SELinux labels, user.* tags) to the copy."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(source)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for name in names:
        try:
            value = os.getxattr(source, name)
            if _xattr_or_none(fd, name) != value:  # a label the folder gave already matches
                os.setxattr(fd, name, value)
        except OSError as e:
            raise WriteError(0, f"cannot keep the extended attribute {name} in a rewritten copy "
                                f"({e.strerror or e}); the file is unchanged") from None


def _xattr_or_none(fd: int, name: str) -> bytes | None:
    try:
        return os.getxattr(fd, name)
    except OSError:
        return None


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    # the change time too: a writer can put the modification time back, never the change time
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _owner(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_uid, st.st_gid


def _open_unnamed(folder: str) -> int | None:
    """An unnamed file in ``folder`` (Linux O_TMPFILE), else None."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None  # the file system has no unnamed files: fall back to a named one
        raise


def _link_unnamed(fd: int, name: str) -> None:
    """Give an O_TMPFILE file a name: linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N (os.link calls
    plain link(), which does not follow that link, unless a folder descriptor is passed)."""
    proc = os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.link(str(fd), name, src_dir_fd=proc, follow_symlinks=True)
    finally:
        os.close(proc)


def _remove_stale_temporaries(folder: str, name: str) -> None:
    """Temporary files of runs that were killed in the instant between naming one and renaming it
    (their process is gone); a live run's file is left alone."""
    prefix = f".{name}."
    try:
        with os.scandir(folder) as entries:
            stale = [e.name for e in entries if e.name.startswith(prefix) and e.name.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for entry in stale:
        pid = entry[len(prefix):-len(TEMP_SUFFIX)]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, entry))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a file of our own, left by an earlier failure in this process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _sync_folder(folder: str) -> None:
    """Make the rename durable (best effort: not every system can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def unified_diff(path: str, before: str, after: str) -> str:
    a, b = _LINE.findall(before), _LINE.findall(after)
    lines = []
    for line in difflib.unified_diff(a, b, fromfile=path, tofile=path):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)
