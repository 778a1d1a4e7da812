"""The helper process: ``python -m cg_lint.helper.daemon IDENTITY`` (the flake8 plugin starts it).

It lints what fresh flake8 processes send, with the plugin's own code path after a result-cache
miss (``Plugin._lint``: the reduction, the region entry, libcst, the result cache's writes), kept
warm between requests: libcst imported once, unchanged statements parsed once. One request at a
time, each in the sender's working folder, each with a fresh view of the project on disk (the
trace context), as a fresh flake8 process would have.

It serves only its own user (``SO_PEERCRED``) and its own build, and exits:

- when another is already running or starting for this build (it holds ``h-ID.lock`` for life);
- when its build is not the one it was started for, or a request names another build;
- when its code or libcst changes on disk (checked before each answer and while idle);
- when its socket is removed or replaced, after ``IDLE`` seconds without a request (10 minutes),
  past ``MAX_MB`` of resident memory (1 GB), on ``cg-lint helper stop``, on SIGTERM/SIGINT/SIGHUP;
- when one request takes longer than ``STUCK`` seconds (no request should: a stuck helper would
  otherwise live on, and every client would wait for its timeout).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import sys
import time
from typing import Any

from cg_lint import __version__
from cg_lint.helper import place
from cg_lint.helper.client import _same_user
from cg_lint.helper.wire import WireError, receive, send, settings_from_json

IDLE = 600.0
MAX_MB = 1024.0
STUCK = 120.0
READ_TIMEOUT = 5.0  # a client sends its request at once


class Helper:
    def __init__(self, ident: str, folder: str) -> None:
        self.ident = ident
        self.folder = folder
        self.path = place.socket_path(folder, ident)
        self.idle_limit = place.number(place.ENV_IDLE, IDLE)
        self.max_rss = place.number(place.ENV_MAX_MB, MAX_MB) * 2**20
        self.requests = 0
        self.started = self.last = time.monotonic()
        self.inode: tuple[int, int] | None = None
        self.sock: socket.socket | None = None

    def bind(self) -> None:
        """Listen at a temporary name, then rename it into place: a client never finds a socket
        that is not yet listening, and a dead helper's leftover is replaced, not reused."""
        temp = os.path.join(self.folder, f".h-{self.ident}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(temp)
        finally:
            os.umask(old)
        os.chmod(temp, 0o600)
        sock.listen(16)
        os.replace(temp, self.path)
        st = os.lstat(self.path)
        self.inode = (st.st_dev, st.st_ino)
        self.sock = sock

    def still_ours(self) -> bool:
        """The socket file is the one this helper bound, and its code on disk is what it runs."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.inode and place.identity(fresh=True) == self.ident

    def serve(self) -> None:
        assert self.sock is not None
        tick = max(0.05, min(5.0, self.idle_limit / 4))
        self.sock.settimeout(tick)
        while True:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                if time.monotonic() - self.last > self.idle_limit or not self.still_ours():
                    return
                continue
            with conn:
                if not _same_user(conn):  # another user reached the socket: never served
                    continue
                if not self.answer(conn):
                    return
            self.last = time.monotonic()
            if _rss() > self.max_rss:  # a leak, or a huge project: a new helper starts small
                return

    def answer(self, conn: socket.socket) -> bool:
        """Answer one request; False: exit now (the answer, if any, is sent first)."""
        conn.settimeout(READ_TIMEOUT)
        try:
            request = receive(conn)
        except WireError:
            return True
        op = request.get("op")
        base: dict[str, Any] = {"identity": self.ident, "pid": os.getpid(), "version": __version__}
        if op == "status":
            send_quietly(conn, {**base, "ok": True, "requests": self.requests,
                                "idle": time.monotonic() - self.last, "rss_mb": _rss() / 2**20})
            return True
        if op == "stop":
            send_quietly(conn, {**base, "ok": True})
            return False
        if op != "lint":
            send_quietly(conn, {**base, "ok": False, "error": "unknown request"})
            return True
        if request.get("identity") != self.ident or not self.still_ours():
            send_quietly(conn, {**base, "ok": False, "error": "another cg-lint build"})
            return False
        conn.settimeout(None)
        import faulthandler

        faulthandler.dump_traceback_later(STUCK, exit=True)
        try:
            findings = lint(request)
            answer = {**base, "ok": True, "findings": findings}
        except Exception as e:  # noqa: BLE001 - the client lints in-process and reports it there
            answer = {**base, "ok": False, "error": f"{type(e).__name__}: {e}"}
        finally:
            faulthandler.cancel_dump_traceback_later()
        self.requests += 1
        conn.settimeout(READ_TIMEOUT)
        send_quietly(conn, answer)
        return True

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        with contextlib.suppress(OSError):
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self.inode:  # never another helper's socket
                os.unlink(self.path)


def send_quietly(conn: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(WireError):
        send(conn, message)


def lint(request: dict[str, Any]) -> list[list[Any]]:
    """What ``Plugin._run`` yields after a result-cache miss, for the request's file and text."""
    from cg_lint.flake8_plugin import Plugin
    from cg_lint.result_cache import ResultCache, settings_key

    path, text, cwd = request["path"], request["text"], request["cwd"]
    if not (isinstance(path, str) and isinstance(text, str) and isinstance(cwd, str)):
        raise ValueError("path, text and cwd must be strings")
    settings = settings_from_json(request["settings"])
    key_text = settings_key(settings, "flake8", apply_noqa=False)
    if key_text != request.get("settings_key"):
        raise ValueError("the settings did not survive the trip")
    os.chdir(cwd)  # relative paths, per-file-ignores and the project are the sender's
    try:
        cache = key = None
        where = request.get("cache")
        if isinstance(where, dict):
            cache = ResultCache(str(where["dir"]), key_text, secret_dir=str(where["secret_dir"]))
            if not cache.usable:
                cache = None
            else:
                key = cache.key(path, text.encode("utf-8", "surrogatepass"))
        Plugin.trace_contexts = None  # the project as it is on disk now, as in a fresh process
        plugin = Plugin(_tree(os.path.abspath(path), text), text.splitlines(keepends=True), path)
        return [[line, column, message] for line, column, message, _ in plugin._lint(text, settings, cache, key)]
    finally:
        os.chdir("/")


_TREES: dict[str, Any] = {}  # the files linted last, oldest first: their text and `ast`
MAX_TREES = 16


def _tree(path: str, text: str) -> Any:
    """The ``ast`` flake8 gives the plugin in-process, re-parsing only the statements an edit of
    the file touched since its last request (as the language server does: ~20 ms of a 2,000-line
    file's request otherwise)."""
    from cg_lint.server.incremental_ast import IncrementalAst

    kept = _TREES.pop(path, None) or IncrementalAst()
    _TREES[path] = kept
    while len(_TREES) > MAX_TREES:
        del _TREES[next(iter(_TREES))]
    return kept.parse(text)


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def warm() -> None:
    """What the first request would pay: libcst, the engine and the rules."""
    from cg_lint.engine import lint_source
    from cg_lint.flake8_plugin import Plugin
    from cg_lint.prefilter.planned import plan_file  # noqa: F401

    source = "import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x):\n    return x, lambda dy: dy\n"
    from cg_lint.config import Settings

    lint_source(source, "warm.py", Settings(), apply_noqa=False)
    Plugin.trace_contexts = None


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not place.supported():
        return 2
    wanted = argv[0]
    folder = place.private_folder(create=False)
    if folder is None or place.identity() != wanted:  # not our folder, or not the build asked for
        return 1
    try:
        lock = os.open(place.lock_path(folder, wanted), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another helper of this build runs or starts
        return 0
    with contextlib.suppress(OSError):  # started: the next start need not wait (client._claim_start)
        os.unlink(place.start_path(folder, wanted))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _leave)
    helper = Helper(wanted, folder)
    try:
        warm()
        helper.bind()
        helper.serve()
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        helper.close()
        os.close(lock)
    return 0


def _leave(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
