"""Lint results of unchanged files, kept on disk between runs (as ruff and mypy do).

A fresh process (flake8 started by an editor on every save, pre-commit, CI re-runs) otherwise pays
libcst's import and a full parse for every file holding a custom gradient, even when nothing
changed. An entry is found by a key hashing everything the result depends on:

- the file's bytes and the path it is reported under (findings carry it; ``per-file-ignores``
  match its absolute form);
- the settings that change findings (selection, ignores, per-file ignores and their root,
  decorators, whether ``# noqa`` applies) and the frontend asking;
- cg-lint itself: its version and the size and modification time of each of its modules, so an
  edited checkout never reads results of the code it replaced.

Entries are small JSON files, written to a temporary name and renamed into place (a reader never
sees half an entry; two writers of one key write the same bytes). The cache is a trust boundary
(``cg_lint/cache_trust.py``): names are keyed, and entries signed, with a per-user secret, so an
entry a repository ships or edits is a miss, never fewer findings; entries are read like sources
(regular files only, bounded in size), and one that does not verify, decode or validate is a miss.
Reads refresh an entry's modification time; a trim removes the least recently used entries beyond
``MAX_ENTRIES`` but never one this run used (a run over more files than the bound would otherwise
evict, in scan order, exactly the entries it is about to read: every later run would miss), and
the CLI trims once, after its run. Results with an internal error are never kept. Every failure
here (a read-only folder, a full disk) only costs the cache, never the run.

The folder: ``--cache-dir``, else ``cache-dir`` in ``[tool.cg_lint]`` (only a cg-lint folder inside
the project: see ``open_cache``), else ``$CG_LINT_CACHE_DIR``, else ``$XDG_CACHE_HOME/cg-lint``
(``~/.cache/cg-lint``), which also holds the secret. This module imports no libcst: a hit costs
a hash, an ``open`` and a small ``json.loads``.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cg_lint import __version__
from cg_lint.cache_trust import TAG, TAG_NAME, Refused, confined, create_new, user_secret
from cg_lint.safe_read import Unreadable, read_bytes

if TYPE_CHECKING:  # the flake8 plugin's hits never build findings: dataclasses cost ~4 ms to create
    from cg_lint.findings import FileResult

SCHEMA = 3  # 2: signed entries; 3: findings may carry a lead
MAX_ENTRIES = 20_000  # ~1-2 KB each: some 30 MB at most, unless one run uses more
MAX_ENTRY_BYTES = 4 << 20  # read like a source: a bigger "entry" is not ours
PRUNE_TO = 0.8  # a trim keeps this share of MAX_ENTRIES, the most recently used
ENV = "CG_LINT_CACHE_DIR"
_SUBDIR = f"results-v{SCHEMA}"
_fingerprint: str | None = None


def _hasher(data: bytes = b"", key: bytes = b"", person: bytes = b""):
    """BLAKE2b from CPython's own module: hashlib's import loads OpenSSL (~3 ms, a tenth of what a
    cached flake8 run adds). Keyed, it is a MAC (what HMAC gives, in one pass)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=20, key=key, person=person)


def default_dir() -> str:
    if os.environ.get(ENV):
        return os.environ[ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cg-lint")


def code_fingerprint(fresh: bool = False) -> str:
    """cg-lint's version and each module's (name, size, mtime), hashed once per process (``fresh``:
    read again, without replacing the process's value: the flake8 helper asking whether its code
    changed on disk)."""
    global _fingerprint
    if _fingerprint is None or fresh:
        digest = _hasher(__version__.encode())
        stack = [os.path.dirname(os.path.abspath(__file__))]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(".py"):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    digest.update(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                elif entry.name != "__pycache__" and entry.is_dir():
                    stack.append(entry.path)
        if fresh and _fingerprint is not None:
            return digest.hexdigest()
        _fingerprint = digest.hexdigest()
    return _fingerprint


# Settings fields that cannot change a file's findings; every other field, including any added
# later, is part of the key (a new field can only cost misses, never a stale result)
_NOT_FINDINGS = frozenset(
    {"exclude", "extend_exclude", "config_file", "runtime", "cache_dir", "root", "flake8_helper"}
)


def settings_key(settings: Any, frontend: str, apply_noqa: bool = True) -> str:
    """What in ``settings`` can change a file's findings (the config is read once per run)."""
    from dataclasses import fields

    parts: list[tuple[str, Any]] = [("frontend", frontend), ("noqa", apply_noqa)]
    for f in fields(settings):
        if f.name not in _NOT_FINDINGS:
            value = getattr(settings, f.name)
            parts.append((f.name, sorted(value) if isinstance(value, (set, frozenset)) else value))
    if settings.per_file_ignores:  # matched against paths relative to the root
        parts.append(("root", os.path.abspath(settings.root)))
    return repr(parts)


class ResultCache:
    """Entries under ``directory``; ``secret``: when None, the user's (``user_secret``), kept in
    ``secret_dir`` (default: the user's cache folder)."""

    def __init__(self, directory: str | os.PathLike[str], settings: str, secret: bytes | None = None,
                 secret_dir: str | None = None) -> None:
        self.root = Path(directory)
        self.folder = self.root / _SUBDIR
        self._settings = settings
        self._ready = False
        self._secret = secret if secret is not None else user_secret(secret_dir or default_dir())
        self._started = time.time_ns()  # entries used since are this run's: never trimmed
        self._deferred = False
        self._trim_due = False

    @property
    def usable(self) -> bool:
        return self._secret is not None

    def key(self, path: str, data: bytes, kind: str = "file") -> str:
        """The entry of ``data`` reported under ``path``. ``kind``: what ``data`` is, so keys of
        different kinds never meet ("file": its bytes; "region": the flake8 plugin's reduced text)."""
        digest = _hasher(key=self._secret or b"", person=b"cg-lint-key")
        for part in (kind, code_fingerprint(), self._settings, path, os.path.abspath(path)):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _mac(self, key: str, payload: bytes) -> bytes:
        digest = _hasher(key=self._secret or b"", person=b"cg-lint-entry")
        digest.update(key.encode("ascii") + b"\0" + payload)
        return digest.hexdigest().encode("ascii")

    def get(self, key: str) -> FileResult | None:
        data = self.get_raw(key)
        if data is None:
            return None
        try:
            return _decode(data)
        except (ValueError, TypeError, KeyError, AttributeError):
            return None  # an entry of the right schema but the wrong shape: a miss

    def get_raw(self, key: str) -> dict[str, Any] | None:
        """The entry as stored (JSON: ``findings`` as ``Finding.to_json`` gives them, ``error``,
        ``parsed``), or None; the flake8 plugin reads its tuples straight from it."""
        if self._secret is None or not _is_key(key):
            return None
        entry = os.path.join(self.folder, key)
        try:
            raw = read_bytes(entry, MAX_ENTRY_BYTES)  # as sources: never blocks on a FIFO or a device
        except Unreadable:
            return None
        mac, _, payload = raw.partition(b"\n")
        if mac != self._mac(key, payload):  # not written by this user's cg-lint for this key
            return None
        import json  # here: a run that finds nothing to lint never needs it

        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):
            return None  # corrupt: a miss, replaced by the next write
        if not _valid(data):
            return None
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(entry, follow_symlinks=False)  # most recently used: the last to be trimmed
        return data

    def put(self, key: str, result: FileResult) -> None:
        """Keep ``result`` (findings from the text under this key)."""
        if self._secret is None or not _is_key(key):
            return
        if result.error is not None and result.error.message.startswith("internal error"):
            return
        if result.reads_other_files:
            return
        self.put_raw(key, _encode(result))

    def put_raw(self, key: str, entry: dict[str, Any]) -> None:
        """Keep ``entry`` (the shape ``get_raw`` gives; more keys may ride along) under ``key``."""
        if self._secret is None or not _is_key(key):
            return
        import json

        try:
            payload = json.dumps({**entry, "schema": SCHEMA}, separators=(",", ":")).encode("utf-8", "surrogatepass")
            data = self._mac(key, payload) + b"\n" + payload
            if len(data) > MAX_ENTRY_BYTES:
                return  # it could not be read back
            self._prepare()
            temp = os.path.join(self.folder, f".{key}.{os.getpid()}.tmp")
            if not create_new(temp, data):  # never through a symlink; a full disk leaves nothing
                return
            try:
                os.replace(temp, os.path.join(self.folder, key))
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            if key.startswith("00"):  # one write in 256 checks the folder's size
                self._trim_due = True
                if not self._deferred:
                    self.trim()
        except (OSError, ValueError):
            pass

    @contextlib.contextmanager
    def run(self) -> Iterator[ResultCache]:
        """One run over many files: trim once at its end, when every entry it reads was read."""
        self._deferred = True
        try:
            yield self
        finally:
            self._deferred = False
            if self._trim_due:
                self.trim()

    def trim(self) -> int:
        self._trim_due = False
        return prune(self.folder, keep_since=self._started)

    def _prepare(self) -> None:
        if self._ready:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        create_new(str(self.root / ".gitignore"), b"# created by cg-lint\n*\n")
        create_new(str(self.root / TAG_NAME), TAG)
        self._ready = True


def open_cache(settings_key: str, user_choice: str | None = None, project_choice: str | None = None,
               project_root: str | None = None) -> tuple[ResultCache | None, str | None]:
    """(the cache, a warning or None). ``user_choice`` (a command-line flag) is trusted;
    ``project_choice`` (a repository's configuration, relative to ``project_root``) is used only
    when ``cache_trust.confined`` accepts it, else the user's folder is, with a warning."""
    warning = None
    folder = user_choice
    if folder is None and project_choice is not None:
        try:
            folder = confined(project_choice, project_root or os.getcwd())
            if os.path.islink(os.path.join(folder, _SUBDIR)):
                raise Refused(f"{os.path.join(folder, _SUBDIR)} is a symlink")
        except Refused as e:
            warning = (f"the configured cache folder {project_choice} is not used ({e}); "
                       f"results are cached in {default_dir()}")
    # the secret stays with the user: in the folder they named, else in their cache folder
    cache = ResultCache(folder or default_dir(), settings_key, secret_dir=user_choice)
    return (cache if cache.usable else None), warning


def _is_key(name: str) -> bool:
    return len(name) == 40 and all(c in "0123456789abcdef" for c in name)


def _is_ours(name: str) -> bool:
    """An entry, or a temporary one (``.KEY.PID.tmp``): the only names a trim may delete."""
    if _is_key(name):
        return True
    parts = name.split(".")
    return len(parts) == 4 and parts[0] == "" and _is_key(parts[1]) and parts[2].isdigit() and parts[3] == "tmp"


def prune(folder: str | os.PathLike[str], max_entries: int = MAX_ENTRIES, keep_since: int | None = None) -> int:
    """Delete the least recently used entries beyond ``max_entries`` (down to PRUNE_TO of it),
    never one used at or after ``keep_since`` (ns), and nothing but entries (no other file, no
    symlink's target)."""
    try:
        with os.scandir(folder) as it:
            entries = [e for e in it if _is_ours(e.name) and e.is_file(follow_symlinks=False)]
    except OSError:
        return 0
    if len(entries) <= max_entries:
        return 0
    aged: list[tuple[int, str]] = []
    for e in entries:
        try:
            mtime = e.stat(follow_symlinks=False).st_mtime_ns
        except OSError:
            continue
        if keep_since is None or mtime < keep_since:
            aged.append((mtime, e.path))
    aged.sort()
    removed = 0
    for _, path in aged[: max(0, len(entries) - int(max_entries * PRUNE_TO))]:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            continue
    return removed


def _encode(result: FileResult) -> dict[str, Any]:
    error = result.error
    return {
        "schema": SCHEMA,
        "parsed": result.parsed,
        "findings": [f.to_json() for f in result.findings],
        "error": None if error is None else [error.message, error.line, error.column],
    }


def _valid(data: Any) -> bool:
    """The shape every reader relies on (an entry that is not is a miss)."""
    if (
        not isinstance(data, dict)
        or data.get("schema") != SCHEMA
        or not isinstance(data.get("findings"), list)
        or not isinstance(data.get("parsed"), bool)
    ):
        return False
    error = data.get("error")
    if error is not None and not (isinstance(error, list) and len(error) == 3 and isinstance(error[0], str)):
        return False
    keys = {"line", "column", "code", "message"}
    return all(
        isinstance(f, dict)
        and keys <= f.keys()
        and type(f["line"]) is int
        and type(f["column"]) is int
        and isinstance(f["code"], str)
        and isinstance(f["message"], str)
        for f in data["findings"]
    )


def _decode(data: dict[str, Any]) -> FileResult:
    from cg_lint.findings import FileError, FileResult, Finding

    result = FileResult(
        "", findings=[Finding.from_json(f) for f in data["findings"]], parsed=bool(data["parsed"])
    )
    if data["error"] is not None:
        message, line, column = data["error"]
        result.error = FileError("", str(message), line, column)
    return result


def with_path(result: FileResult, path: str) -> FileResult:
    """A cached result reported under ``path`` (the key holds it, the entry need not)."""
    from cg_lint.findings import FileError

    result.path = path
    if result.error is not None:
        result.error = FileError(path, result.error.message, result.error.line, result.error.column)
    return result


def lookup(
    cache: ResultCache | None, path: str, data: bytes
) -> tuple[str | None, FileResult | None]:
    """(the key, the cached result or None); (None, None) without a cache."""
    if cache is None:
        return None, None
    key = cache.key(path, data)
    hit = cache.get(key)
    return key, (with_path(hit, path) if hit is not None else None)


__all__ = ["ResultCache", "default_dir", "lookup", "open_cache", "prune", "settings_key"]
