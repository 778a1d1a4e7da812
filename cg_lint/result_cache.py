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
sees half an entry; two writers of one key write the same bytes). An entry that does not decode is
a miss. Reads refresh an entry's modification time, and once in a while a write trims the folder
to ``MAX_ENTRIES``, oldest first. Results with an internal error are never kept. Every failure
here (a read-only folder, a full disk) only costs the cache, never the run.

The folder: ``--cache-dir`` / ``cache-dir`` in ``[tool.cg_lint]``, else ``$CG_LINT_CACHE_DIR``,
else ``$XDG_CACHE_HOME/cg-lint`` (``~/.cache/cg-lint``). This module imports no libcst: a hit costs
a hash, an ``open`` and a small ``json.loads``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cg_lint import __version__

if TYPE_CHECKING:  # the flake8 plugin's hits never build findings: dataclasses cost ~4 ms to create
    from cg_lint.findings import FileResult

SCHEMA = 1
MAX_ENTRIES = 20_000  # ~1-2 KB each: some 30 MB at most
PRUNE_TO = 0.8  # a trim keeps this share of MAX_ENTRIES, the most recently used
ENV = "CG_LINT_CACHE_DIR"
_SUBDIR = f"results-v{SCHEMA}"
_fingerprint: str | None = None


def _hasher(data: bytes = b""):
    """BLAKE2b from CPython's own module: hashlib's import loads OpenSSL (~3 ms, a tenth of what a
    cached flake8 run adds)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b
    return blake2b(data, digest_size=20)


def default_dir() -> str:
    if os.environ.get(ENV):
        return os.environ[ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cg-lint")


def code_fingerprint() -> str:
    """cg-lint's version and each module's (name, size, mtime), hashed once per process."""
    global _fingerprint
    if _fingerprint is None:
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
        _fingerprint = digest.hexdigest()
    return _fingerprint


# Settings fields that cannot change a file's findings; every other field, including any added
# later, is part of the key (a new field can only cost misses, never a stale result)
_NOT_FINDINGS = frozenset(
    {"exclude", "extend_exclude", "config_file", "runtime", "cache_dir", "root"}
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
    def __init__(self, directory: str | os.PathLike[str], settings: str) -> None:
        self.root = Path(directory)
        self.folder = self.root / _SUBDIR
        self._settings = settings
        self._ready = False

    def key(self, path: str, data: bytes) -> str:
        digest = _hasher()
        for part in (code_fingerprint(), self._settings, path, os.path.abspath(path)):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(data)
        return digest.hexdigest()

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
        entry = self.folder / key
        try:
            with open(entry, "rb") as fh:
                raw = fh.read()
        except OSError:
            return None
        import json  # here: a run that finds nothing to lint never needs it

        try:
            data = json.loads(raw)
        except ValueError:
            return None  # corrupt: a miss, replaced by the next write
        if not _valid(data):
            return None
        with contextlib.suppress(OSError):
            os.utime(entry)  # most recently used: the last to be trimmed
        return data

    def put(self, key: str, result: FileResult) -> None:
        """Keep ``result`` (findings from the text under this key)."""
        if result.error is not None and result.error.message.startswith("internal error"):
            return
        import json

        try:
            self._prepare()
            data = json.dumps(_encode(result), separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
            temp = self.folder / f".{key}.{os.getpid()}.tmp"
            with open(temp, "wb") as fh:
                fh.write(data)
            os.replace(temp, self.folder / key)
            if key.startswith("00"):  # one write in 256 checks the folder's size
                prune(self.folder)
        except (OSError, ValueError):
            pass

    def _prepare(self) -> None:
        if self._ready:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (".gitignore", "# created by cg-lint\n*\n"),
            (
                "CACHEDIR.TAG",
                "Signature: 8a477f597d28d172789f06886806bc55\n"
                "# cg-lint's result cache; see https://bford.info/cachedir/\n",
            ),
        ):
            marker = self.root / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
        self._ready = True


def prune(folder: str | os.PathLike[str], max_entries: int = MAX_ENTRIES) -> int:
    """Delete the least recently used entries beyond ``max_entries`` (down to PRUNE_TO of it)."""
    try:
        with os.scandir(folder) as it:
            entries = [e for e in it if e.is_file()]
    except OSError:
        return 0
    if len(entries) <= max_entries:
        return 0
    aged: list[tuple[int, str]] = []
    for e in entries:
        try:
            aged.append((e.stat().st_mtime_ns, e.path))
        except OSError:
            continue
    aged.sort()
    removed = 0
    for _, path in aged[: len(aged) - int(max_entries * PRUNE_TO)]:
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
    ):
        return False
    keys = {"line", "column", "code", "message"}
    return all(
        isinstance(f, dict)
        and keys <= f.keys()
        and isinstance(f["line"], int)
        and isinstance(f["column"], int)
        for f in data["findings"]
    ) and (data.get("error") is None or isinstance(data["error"], list))


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


__all__ = ["ResultCache", "default_dir", "lookup", "prune", "settings_key"]
