"""What the result cache may trust: where it may live and the secret its entries are signed with.

A repository decides what its ``[tool.cg_lint] cache-dir`` (or flake8's ``cg-cache-dir``) says and
what the folder it names holds, so neither may decide what is reported, nor where cg-lint writes
or deletes files:

- a folder the repository chose must be inside the project, reached without a symlink, and be
  cg-lint's (marked with ``CACHEDIR.TAG``, or new); anything else is refused and the user's cache
  folder is used;
- entries are found and checked with a per-user secret that only the user's cache folder holds
  (``secret``, 32 random bytes, mode 0600): a repository cannot compute an entry's name, nor
  write one that verifies, so a shipped or edited entry is a miss.

The user's own choices (``--cache-dir``, ``$CG_LINT_CACHE_DIR``, ``$XDG_CACHE_HOME``) are trusted.
"""

from __future__ import annotations

import os
import stat

SECRET_NAME = "secret"
SECRET_BYTES = 32
TAG_NAME = "CACHEDIR.TAG"
TAG_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
TAG = TAG_SIGNATURE + b"\n# cg-lint's result cache; see https://bford.info/cachedir/\n"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_secrets: dict[str, bytes | None] = {}


class Refused(Exception):
    """A repository-chosen cache folder that may not be used; the message says why."""


def confined(folder: str, root: str) -> str:
    """``folder`` (absolute, or relative to ``root``) if the repository may put the cache there.

    It must lie inside ``root``, every part of it that exists must be a real folder (no symlink:
    one could lead anywhere), and an existing folder must already be a cg-lint cache (its
    ``CACHEDIR.TAG``): trimming deletes files, and a source folder is not ours to trim.
    """
    root = os.path.abspath(root)
    path = os.path.normpath(os.path.join(root, folder))
    if os.path.commonpath([root, path]) != root or path == root:
        raise Refused("it is not a folder inside the project")
    current = root
    for part in os.path.relpath(path, root).split(os.sep):
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return path  # the rest is created, as real folders
        except OSError as e:
            raise Refused(f"{current}: {e.strerror or e}") from None
        if stat.S_ISLNK(mode):
            raise Refused(f"{current} is a symlink")
        if not stat.S_ISDIR(mode):
            raise Refused(f"{current} is not a folder")
    if not is_tagged(path):
        raise Refused(f"the folder exists and is not a cg-lint cache (no {TAG_NAME})")
    return path


def is_tagged(folder: str) -> bool:
    """Whether ``folder`` holds a real ``CACHEDIR.TAG`` (not a symlink, not a FIFO)."""
    try:
        fd = os.open(os.path.join(folder, TAG_NAME), os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(TAG_SIGNATURE)) == TAG_SIGNATURE
    except OSError:
        return False
    finally:
        os.close(fd)


def create_new(path: str, data: bytes, mode: int = 0o644) -> bool:
    """Write a file that must not exist yet, never through a symlink planted in its place."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    except OSError:
        return False
    try:
        os.write(fd, data)
        return True
    except OSError:
        os.close(fd)
        fd = -1
        os.unlink(path)  # a partial marker would be taken for a whole one later
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def user_secret(user_dir: str) -> bytes | None:
    """The per-user secret kept in ``user_dir`` (created on first use), or None when it cannot be
    read or made safely, and then no cache is used."""
    if user_dir not in _secrets:
        _secrets[user_dir] = _load_secret(user_dir)
    return _secrets[user_dir]


def _load_secret(user_dir: str) -> bytes | None:
    path = os.path.join(user_dir, SECRET_NAME)
    secret = _read_secret(path)
    if secret is not None:
        return secret
    try:
        os.makedirs(user_dir, mode=0o700, exist_ok=True)
    except OSError:
        return None
    create_new(path, os.urandom(SECRET_BYTES), 0o600)
    return _read_secret(path)  # ours, or that of a run that created it first


def _read_secret(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        # our own regular file that no one else can read (who reads it can forge entries)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_uid != os.geteuid():
            return None
        data = os.read(fd, SECRET_BYTES + 1)
        return data if len(data) == SECRET_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)
