"""What a fresh flake8 process does with the helper, and ``cg-lint helper status|stop``.

``ask`` is called after a result-cache miss, before anything imports libcst. It connects to the
helper of this exact build (``place.identity``) in the user's private folder, sends what the
in-process path would use (the path, the text flake8 read, the settings, the working folder and
the result cache's place) and returns the findings as the plugin yields them. None means "lint
in-process": no helper yet (one is started, without waiting for it), helpers turned off, a folder
or socket that is not the user's alone, a listener that is not this user, a timeout, a closed
connection, an answer of the wrong shape or from another build. Nothing here raises.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from cg_lint.helper import place
from cg_lint.helper.wire import WireError, receive, send, settings_to_json

if TYPE_CHECKING:
    from cg_lint.config import Settings
    from cg_lint.result_cache import ResultCache

CONNECT_TIMEOUT = 1.0
ANSWER_TIMEOUT = 10.0  # a helper that is this late is given up on (the file is linted in-process)
_SO_PEERCRED = getattr(socket, "SO_PEERCRED", 17)


def usable() -> bool:
    return place.supported() and not place.switched_off()


def ask(path: str, text: str, settings: Settings, cache: ResultCache | None) -> list[tuple[int, int, str]] | None:
    try:
        folder = place.private_folder(create=True)
        if folder is None:
            return None
        ident = place.identity()
        from cg_lint.result_cache import default_dir, settings_key

        request = {
            "op": "lint", "identity": ident, "cwd": os.getcwd(), "path": path, "text": text,
            "settings": settings_to_json(settings),
            "settings_key": settings_key(settings, "flake8", apply_noqa=False),
            "cache": None if cache is None else {"dir": str(cache.root), "secret_dir": default_dir()},
        }
        answer = _exchange(folder, ident, request, start_if_absent=True)
        return None if answer is None else _findings(answer)
    except Exception:  # noqa: BLE001 - any failure of the helper costs only the helper
        return None


def _exchange(folder: str, ident: str, request: dict[str, Any], start_if_absent: bool = False,
              timeout: float | None = None) -> dict[str, Any] | None:
    path = place.socket_path(folder, ident)
    if not place.is_private(path):  # absent, or not this user's own socket
        if start_if_absent and not os.path.lexists(path):
            start(folder, ident)
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):  # a helper that died: start another
            if start_if_absent:
                start(folder, ident)
            return None
        if not _same_user(sock):
            return None
        sock.settimeout(timeout or place.number(place.ENV_TIMEOUT, ANSWER_TIMEOUT))
        send(sock, request)
        answer = receive(sock)
    except (OSError, WireError):
        return None
    finally:
        sock.close()
    if answer.get("ok") is not True or answer.get("identity") != ident:
        return None
    return answer


def _same_user(sock: socket.socket) -> bool:
    import struct

    creds = sock.getsockopt(socket.SOL_SOCKET, _SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def _findings(answer: dict[str, Any]) -> list[tuple[int, int, str]] | None:
    found = answer.get("findings")
    if not isinstance(found, list):
        return None
    out = []
    for item in found:
        if not (isinstance(item, list) and len(item) == 3 and type(item[0]) is int and type(item[1]) is int
                and isinstance(item[2], str) and item[2].startswith("CG")):
            return None
        out.append((item[0], item[1], item[2]))
    return out


def start(folder: str, ident: str) -> bool:
    """Start this build's helper in the background unless one holds its lock (running, or being
    started by another flake8 process). Never waits for it: this run lints in-process."""
    import fcntl

    try:
        fd = os.open(place.lock_path(folder, ident), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the lock: the helper takes it for its whole life
    if not _claim_start(folder, ident):
        return False
    import cg_lint

    root = os.path.dirname(os.path.dirname(os.path.abspath(cg_lint.__file__)))
    env = dict(os.environ, **{place.ENV_OFF: "1"})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    argv = [sys.executable, "-m", "cg_lint.helper.daemon", ident]
    _spawn_detached(argv, env)
    return True


START_GAP = 10.0  # seconds a start in flight holds off the next; a helper takes its lock in about one


def _claim_start(folder: str, ident: str) -> bool:
    """Whether this run may spawn the helper: no other start of this build in the last START_GAP
    seconds. Between a spawn and the helper taking its lock every run finds no helper, so without
    this a loop of runs in one process (or a helper that cannot start) would spawn one per run."""
    stamp = place.start_path(folder, ident)
    try:
        age = time.time() - os.lstat(stamp).st_mtime
        if 0 <= age < START_GAP:
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        os.utime(stamp, follow_symlinks=False)
    except OSError:
        return False
    return True


def _spawn_detached(argv: list[str], env: dict[str, str]) -> None:
    """Fork twice: the helper is nobody's child (no zombie in a long-lived parent), in a session
    of its own (no terminal's signals), in ``/`` (holds no folder), with /dev/null as its streams."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: only system calls until exec
        try:
            os.setsid()
            if os.fork() == 0:
                os.chdir("/")
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execve(argv[0], argv, env)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


# -- cg-lint helper status|stop ------------------------------------------------------------------

def running(stop: bool = False) -> list[dict[str, Any]]:
    """Every helper of this user answering in the folder (any build), stopped when ``stop``."""
    folder = place.private_folder(create=False)
    if folder is None:
        return []
    found = []
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("h-") and name.endswith(".sock")):
            continue
        ident = name[2:-5]
        answer = _exchange(folder, ident, {"op": "stop" if stop else "status", "identity": ident}, timeout=5.0)
        if answer is not None:
            found.append(answer)
    return found


def command(argv: list[str]) -> int:
    usage = "usage: cg-lint helper status|stop"
    if len(argv) != 1 or argv[0] not in ("status", "stop"):
        print(f"cg-lint: error: {usage}", file=sys.stderr)
        return 2
    if not place.supported():
        print("the flake8 helper runs on Linux only: flake8 lints in its own process here")
        return 0
    ours = place.identity()
    helpers = running(stop=argv[0] == "stop")
    for h in helpers:
        build = "this cg-lint" if h.get("identity") == ours else "another cg-lint build"
        if argv[0] == "stop":
            print(f"stopped the helper of {build} (pid {h.get('pid')})")
        else:
            count = h.get("requests")
            print(f"helper of {build} (cg-lint {h.get('version')}): pid {h.get('pid')}, "
                  f"{count} file{'' if count == 1 else 's'} linted, idle {h.get('idle', 0):.0f} s, "
                  f"{h.get('rss_mb', 0):.0f} MB")
    if not helpers:
        print("no helper running")
    if place.switched_off():
        print(f"{place.ENV_OFF} is set: flake8 lints in its own process")
    return 0
