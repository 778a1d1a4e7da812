"""Who the helper is and where it listens.

Identity: one helper serves exactly one build of cg-lint, so its name hashes cg-lint's version and
each of its modules' path, size and modification time (the result cache's fingerprint), the
interpreter, and libcst's files as installed. A client computes it without importing libcst; a
checkout edited or a package upgraded gives a new name, so no client ever reaches a helper running
other code (and the old helper notices and exits: ``daemon``).

Place: ``$XDG_RUNTIME_DIR/cg-lint`` (a per-user tmpfs on systemd systems), else
``/tmp/cg-lint-UID``. The folder must be a real folder (not a symlink), owned by the user, with
no access for group or others; otherwise it is not used at all (and the plugin lints in-process).
"""

from __future__ import annotations

import os
import stat
import sys

ENV_OFF = "CG_LINT_NO_HELPER"
# how long a helper waits for work, the answer timeout of a client (seconds), and the helper's
# memory bound (MB); tests shorten them
ENV_IDLE = "CG_LINT_HELPER_IDLE"
ENV_TIMEOUT = "CG_LINT_HELPER_TIMEOUT"
ENV_MAX_MB = "CG_LINT_HELPER_MAX_MB"
_identity: str | None = None


def supported() -> bool:
    """SO_PEERCRED and AF_UNIX as the helper uses them: Linux."""
    return sys.platform.startswith("linux")


def switched_off() -> bool:
    return os.environ.get(ENV_OFF, "") not in ("", "0")


def _libcst_stamp() -> str:
    """libcst's installed files (path, size, mtime), found on sys.path without importing it."""
    for entry in sys.path:
        folder = os.path.join(entry or os.getcwd(), "libcst")
        out = []
        for name in ("__init__.py", "_version.py"):
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            out.append(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}")
        if out:
            return "\n".join(out)
    return "no libcst"


def identity(fresh: bool = False) -> str:
    """This process's cg-lint build, as 20 hex digits. ``fresh``: read the files again (a running
    helper asking whether its code changed on disk)."""
    global _identity
    if _identity is not None and not fresh:
        return _identity
    from cg_lint import __version__
    from cg_lint.result_cache import _hasher, code_fingerprint

    parts = (__version__, code_fingerprint(fresh=fresh), sys.executable, sys.version, _libcst_stamp(),
             str(os.getuid()))
    value = _hasher("\n".join(parts).encode("utf-8", "surrogateescape"), person=b"cg-lint-helper").hexdigest()[:20]
    if not fresh:
        _identity = value
    return value


def folder_path() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "cg-lint")
    return os.path.join("/tmp", f"cg-lint-{os.getuid()}")


def private_folder(create: bool) -> str | None:
    """The helper's folder when it is the user's alone (created, mode 0700, when ``create``);
    None when it is missing, or anyone else could reach or replace what is in it."""
    path = folder_path()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    return path if is_private(path, stat.S_ISDIR) else None


def is_private(path: str, kind=stat.S_ISSOCK) -> bool:
    """``path`` is itself (no symlink) of ``kind``, owned by this user, and only they may use it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return kind(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def socket_path(folder: str, ident: str) -> str:
    return os.path.join(folder, f"h-{ident}.sock")


def lock_path(folder: str, ident: str) -> str:
    return os.path.join(folder, f"h-{ident}.lock")


def start_path(folder: str, ident: str) -> str:
    """A start in flight: made by the client that spawns a helper, removed by the helper once it
    holds its lock (cg_lint/helper/client.py: start)."""
    return os.path.join(folder, f"h-{ident}.start")


def number(name: str, default: float) -> float:
    """A positive number from the environment, else ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default
