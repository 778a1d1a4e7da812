"""The project, as both tools see it: where its configuration is (the nearest pyproject.toml with a
``[tool.cg_lint]`` table), what the table says (rule selection, excludes, ``decorators``, and the
``runtime`` table runtime-check reads), and which files belong to it (the walk).
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

# no findings, no sources: a fresh flake8 process's cache hit reads its settings through here
from cg_lint.safe_read import MAX_FILE_BYTES

if TYPE_CHECKING:
    from cg_lint.findings import FileError

DEFAULT_SELECT = ("CG0",)
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__",
    "build", "dist", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache",
)
MAX_CONFIG_BYTES = 1024 * 1024  # a pyproject.toml is a few KB; a bigger one is not read
KNOWN_KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "decorators", "runtime", "max-file-size", "cache-dir", "trace-context", "flake8-helper",
}
# whether the graph-mode rules report: where the project can trace the definition, always, never
TRACE_CONTEXTS = ("auto", "always", "never")


class ConfigError(Exception):
    """Bad configuration: the message names the key and the file."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = DEFAULT_SELECT
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    decorators: frozenset[str] = frozenset()
    root: str = "."
    config_file: str | None = None
    max_file_size: int = MAX_FILE_BYTES  # bytes; bigger candidates are reported, not checked
    runtime: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    cache_dir: str | None = None  # the result cache's folder (cg_lint/result_cache.py)
    trace_context: str = "auto"  # TRACE_CONTEXTS (cg_lint/project)
    flake8_helper: bool = True  # the flake8 plugin may ask its warm helper (cg_lint/helper)

    def with_cli(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def is_enabled(self, code: str, path: str | None = None) -> bool:
        selected = _longest_prefix(code, self.select + self.extend_select)
        if selected < 0:
            return False
        ignores = list(self.ignore)
        if path is not None:
            ignores.extend(self.ignores_for(path))
        return _longest_prefix(code, tuple(ignores)) < selected

    def is_explicit(self, code: str) -> bool:
        """Selected by its own code or ALL (not by a prefix such as the default CG0): what an
        opinionated rule needs to report its opinion."""
        return any(s in (code, "ALL") for s in self.select + self.extend_select)

    def ignores_for(self, path: str) -> list[str]:
        rel = _relative(path, self.root)
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if _match(rel, pattern):
                out.extend(codes)
        return out

    def excluder(self) -> Excluder:
        return excluder(self.exclude + self.extend_exclude, self.root)

    def is_excluded(self, path: str) -> bool:
        """Whether an exclude matches ``path``: one without ``/`` any of its components, one with
        ``/`` its path relative to the config root (see ``Excluder``)."""
        return self.excluder().excluded(path)

    def markers(self) -> tuple[str, ...]:
        """Substrings that a file holding a custom gradient must contain (the prefilter)."""
        extra = {d.rsplit(".", 1)[-1] for d in self.decorators}
        return ("custom_gradient", *sorted(extra))


class Excluder:
    """Exclude patterns compiled once: a walk asks per entry, so this is on the hot path.

    A pattern without ``/`` matches any path component (``build``, ``*_pb2.py``); one with ``/``
    matches the path relative to the config root, like ``src/generated`` or ``**/fixtures``.
    """

    def __init__(self, patterns: tuple[str, ...], root: str) -> None:
        cleaned = [p.rstrip("/") for p in patterns if p.rstrip("/")]
        names = [fnmatch.translate(p) for p in cleaned if "/" not in p]
        paths = []
        # a pattern without "/" is matched against each component only: matching it against the
        # relative path too would exclude everything under a top-level folder named explicitly, and
        # cost every entry of a walk a relative-path computation
        for p in cleaned:
            if "/" not in p:
                continue
            paths += [fnmatch.translate(p), fnmatch.translate(p + "/*")]
            if p.startswith("**/"):
                paths.append(fnmatch.translate(p[3:]))
        self._name = re.compile("|".join(names)).match if names else None
        self._path = re.compile("|".join(paths)).match if paths else None
        self._root = os.path.abspath(root)
        self._prefix = self._root.rstrip(os.sep) + os.sep

    def relative(self, path: str) -> str:
        full = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
        full = os.path.normpath(full)
        # outside the root a relative path would be "../../x": match against the absolute one
        rel = full[len(self._prefix):] if full.startswith(self._prefix) else full.lstrip(os.sep)
        return rel.replace(os.sep, "/")

    def excluded(self, path: str) -> bool:
        rel = self.relative(path)
        if self._path is not None and self._path(rel):
            return True
        return self._name is not None and any(self._name(part) for part in rel.split("/"))

    def entry_excluded(self, path: str, name: str) -> bool:
        """For a walk: the folders above ``path`` were already checked, only its own name is new."""
        if self._name is not None and self._name(name):
            return True
        return self._path is not None and bool(self._path(self.relative(path)))


@functools.lru_cache(maxsize=32)
def excluder(patterns: tuple[str, ...], root: str) -> Excluder:
    return Excluder(patterns, root)


def _longest_prefix(code: str, prefixes: tuple[str, ...]) -> int:
    best = -1
    for prefix in prefixes:
        if prefix == "ALL":
            best = max(best, 0)
        elif code.startswith(prefix):
            best = max(best, len(prefix))
    return best


def _relative(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # another drive on Windows
        return path.replace(os.sep, "/")
    return rel.replace(os.sep, "/")


def _match(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*") or \
        (pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]))


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml holding a [tool.cg_lint] table, from ``start`` upward.

    A pyproject.toml on the way that cannot be read or is not valid TOML is an error (ruff's rule):
    skipping it would silently apply a parent's configuration or the defaults instead of its own.
    """
    start = start.resolve()
    for folder in [start, *start.parents] if _is_dir(start) else start.parents:
        candidate = folder / "pyproject.toml"
        if not _is_file(candidate):
            continue
        if "cg_lint" in _tool_table(_read_toml(candidate), candidate):
            return candidate
    return None


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _is_file(path: Path) -> bool:
    """A regular file (never a FIFO someone named pyproject.toml: reading it would hang)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _read_toml(path: Path) -> dict[str, Any]:
    from cg_lint.sources import read_regular

    data = read_regular(str(path), MAX_CONFIG_BYTES)
    if not isinstance(data, bytes):
        raise ConfigError(f"{path}: {data.message}")
    # imported here: most files flake8 hands the plugin have no pyproject.toml above them to read
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 at byte {e.start}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except (RecursionError, MemoryError):  # tomllib recurses per nesting level
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def _tool_table(data: dict[str, Any], path: Path) -> dict[str, Any]:
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table ([tool.cg_lint] is read from it), not {_toml_type(tool)}")
    return tool


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}
    return names.get(type(value), "a date or time")


def load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
    if config is None:
        config = find_config(start or Path.cwd())
        if config is None:
            return Settings(root=str(start if start and _is_dir(start) else Path.cwd()))
    table = _tool_table(_read_toml(Path(config)), Path(config)).get("cg_lint", {})
    return settings_from_table(table, str(Path(config).resolve().parent), str(config))


def settings_from_table(table: dict[str, Any], root: str, source: str = "pyproject.toml") -> Settings:  # noqa: C901 (a table of cases)
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.cg_lint] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key 'tool.cg_lint.{unknown[0]}' (known: {', '.join(sorted(KNOWN_KEYS))})")

    def codes(key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: 'tool.cg_lint.{key}' must be a list of strings")
        for v in value:
            check_code_prefix(v, f"{source}: 'tool.cg_lint.{key}'")
        return tuple(value)

    def strings(key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: 'tool.cg_lint.{key}' must be a list of strings")
        return tuple(value)

    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{source}: 'tool.cg_lint.per-file-ignores' must be a table of pattern = [codes]")
    per_file: list[tuple[str, tuple[str, ...]]] = []
    for pattern, value in pfi.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: 'tool.cg_lint.per-file-ignores.\"{pattern}\"' must be a list of codes")
        for v in value:
            check_code_prefix(v, f"{source}: 'tool.cg_lint.per-file-ignores'")
        per_file.append((pattern, tuple(value)))
    runtime = table.get("runtime", {})
    if not isinstance(runtime, dict):
        raise ConfigError(f"{source}: 'tool.cg_lint.runtime' must be a table")
    size = table.get("max-file-size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise ConfigError(f"{source}: 'tool.cg_lint.max-file-size' must be a positive number of bytes")
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{source}: 'tool.cg_lint.cache-dir' must be a string (a folder)")
    trace = table.get("trace-context")
    if trace is not None and trace not in TRACE_CONTEXTS:
        raise ConfigError(f"{source}: 'tool.cg_lint.trace-context' must be one of {', '.join(TRACE_CONTEXTS)}")
    helper = table.get("flake8-helper")
    if helper is not None and not isinstance(helper, bool):
        raise ConfigError(f"{source}: 'tool.cg_lint.flake8-helper' must be true or false")
    settings = Settings(root=root, config_file=source, runtime=runtime,
                        cache_dir=os.path.join(root, cache_dir) if cache_dir else None)
    return settings.with_cli(
        select=codes("select"), ignore=codes("ignore"), extend_select=codes("extend-select"),
        exclude=strings("exclude"), extend_exclude=strings("extend-exclude"),
        per_file_ignores=tuple(per_file) or None,
        decorators=frozenset(strings("decorators") or ()) or None,
        max_file_size=size, trace_context=trace, flake8_helper=helper,
    )


def check_code_prefix(value: str, where: str) -> None:
    import re

    if value != "ALL" and not re.fullmatch(r"CG\d{0,3}", value):
        raise ConfigError(f"{where}: '{value}' is not a rule code or prefix (e.g. CG003, CG0, ALL)")


# -- the files of the project ------------------------------------------------------------------

def iter_files(paths: list[str], settings: Settings, force_exclude: bool = False) -> Iterator[str | FileError]:
    """Python files under ``paths``. The paths named here are linted even where an exclude would
    match them (ruff's rule); ``force_exclude`` applies the excludes to them too (pre-commit)."""
    from cg_lint.findings import FileError

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
    from cg_lint.findings import FileError

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
