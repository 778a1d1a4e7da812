"""Which files to lint: walk the given paths, skip VCS folders, virtualenvs and excludes."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

from cg_lint.config import Excluder, Settings
from cg_lint.findings import FileError


def iter_files(paths: list[str], settings: Settings, force_exclude: bool = False) -> Iterator[str | FileError]:
    """Python files under ``paths``. The paths named here are linted even where an exclude would
    match them (ruff's rule); ``force_exclude`` applies the excludes to them too (pre-commit)."""
    excluder = settings.excluder()
    for raw in paths:
        try:
            is_dir = stat.S_ISDIR(os.stat(raw).st_mode)
        except OSError as e:  # missing, a folder above without search permission, a loop, ...
            yield FileError(raw, "no such file or directory" if e.errno == errno.ENOENT else
                            f"cannot read: {e.strerror or e}")
            continue
        if force_exclude and raw not in (".", "./") and excluder.excluded(raw):
            continue
        if not is_dir:
            yield raw  # the reader reports what is not a regular file (a FIFO is never opened)
            continue
        yield from _walk(raw, excluder)


def _walk(top: str, excluder: Excluder) -> Iterator[str | FileError]:
    """Like ``os.walk`` top-down in sorted order (a folder's files, then its subfolders), but one
    ``scandir`` per folder and no other system call: symlinked folders are not entered (``os.walk``
    checks each folder with ``lstat``), and a virtualenv is recognised from its own listing (its
    ``pyvenv.cfg``), not by a ``stat`` from its parent. A folder that cannot be listed is reported,
    where ``os.walk`` would skip it without a word."""
    stack = [(top, _listing(top))]
    while stack:
        folder, entries = stack.pop()
        if isinstance(entries, OSError):
            yield FileError(folder, f"cannot read folder: {entries.strerror or entries}")
            continue
        files: list[str] = []
        dirs: list[tuple[str, list[os.DirEntry] | OSError]] = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                if name.endswith((".py", ".pyi")) and not excluder.entry_excluded(entry.path, name):
                    files.append(name)
            elif not entry.is_symlink() and not excluder.entry_excluded(entry.path, name):
                listing = _listing(entry.path)
                if isinstance(listing, OSError) or not any(e.name == "pyvenv.cfg" and _exists(e) for e in listing):
                    dirs.append((name, listing))
        for name in sorted(files):
            yield os.path.join(folder, name)
        dirs.sort(reverse=True, key=lambda pair: pair[0])
        stack.extend((os.path.join(folder, name), listing) for name, listing in dirs)


def _listing(folder: str) -> list[os.DirEntry] | OSError:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError as e:
        return e


def _exists(entry: os.DirEntry) -> bool:
    """``os.path.exists`` of an entry: a dangling symlink does not count."""
    return not entry.is_symlink() or os.path.exists(entry.path)
