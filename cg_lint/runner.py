"""Lint many files: walk, read and substring-filter here; lint the candidates here or in a pool.

The pool starts only once the candidates seen so far hold enough source to pay for it (forking the
workers and shipping results back costs ~30 ms; linting costs ~0.1 ms per line of candidate source,
most of which the prefilter then skips or blanks). Candidates found before the pool started are
handed to it at once, later ones as the walk finds them, so parsing overlaps the walk. Results come
back in walk order, so output does not depend on timing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cg_lint.config import Settings, iter_files
from cg_lint.findings import FileError, FileResult
from cg_lint.prefilter import might_contain
from cg_lint.processes import die_with_parent
from cg_lint.result_cache import ResultCache, lookup
from cg_lint.sources import FileTooLarge, mentions, read_regular

if TYPE_CHECKING:  # the pool's modules (~20 ms) are imported only when a run starts one
    from concurrent.futures import Future, ProcessPoolExecutor

# Below ~250 KB of candidate source the pool does not pay (measured on TF candidates: 186 KB serial
# 57 ms vs pool 61 ms; 300 KB serial 98 ms vs pool 69 ms; see bench/README.md).
POOL_MIN_BYTES = 250_000
POOL_MIN_FILES = 4
# spawn (macOS, Windows) re-imports everything in each worker: it needs much more work to pay
SPAWN_FACTOR = 8
# more workers than this per core only cost memory (and -j 100000 would fork that many)
MAX_JOBS_PER_CORE = 4


def _lint_data(args: tuple[str, bytes, Settings]) -> FileResult:
    from cg_lint.engine import lint_source  # libcst: imported only once a file needs it

    path, data, settings = args
    try:
        return lint_source(data, path, settings)
    except Exception as e:  # never a traceback: the run goes on, the file is reported
        return FileResult(path, error=FileError(path, f"internal error: {type(e).__name__}: {e} (please report this)"))


def _read(path: str, markers: tuple[str, ...], limit: int) -> bytes | FileError | None:
    """The file's bytes; a FileError for a file that is not regular, unreadable, or too large and
    mentions a marker; None for a too-large file that cannot hold a custom gradient (not an error:
    generated tables are big)."""
    data = read_regular(path, limit)
    if isinstance(data, FileTooLarge):
        found = mentions(path, markers)
        return found if isinstance(found, FileError) else data if found else None
    return data


def _start_pool(jobs: int, fork: bool) -> tuple[ProcessPoolExecutor, type[Exception]]:
    """The pool, and the exception its futures raise when a worker dies."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork" if fork else None)
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_init, initargs=(os.getpid(),))
    return pool, BrokenProcessPool


def _worker_init(parent: int) -> None:
    """In each worker: die with the parent, however it ends (a SIGKILL runs no cleanup of ours),
    and leave Ctrl-C to the parent, which stops the pool (a worker's KeyboardInterrupt would only
    print a traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


class Interrupted(BaseException):
    """SIGTERM (or SIGHUP) while a pool runs: unwound like Ctrl-C so the workers are stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def _stop_pool(pool: ProcessPoolExecutor, interrupted: bool) -> None:
    if interrupted:  # do not wait for files in progress: stop the workers now
        for process in list(getattr(pool, "_processes", {}).values()):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()
    pool.shutdown(wait=True, cancel_futures=True)


def _submit(pool: ProcessPoolExecutor, work: tuple[str, bytes, Settings]) -> Future[FileResult]:
    future = pool.submit(_lint_data, work)
    future.cg_lint_path = work[0]  # type: ignore[attr-defined]
    return future


def _path_of(future: Future) -> str:
    return getattr(future, "cg_lint_path", "?")


def _stored(cache: ResultCache | None, keys: dict[str, str], result: FileResult) -> FileResult:
    key = keys.get(result.path)
    if cache is not None and key is not None:
        cache.put(key, result)
    return result


def lint_paths(paths: list[str], settings: Settings, jobs: int | None = None,  # noqa: C901 (a table of cases)
               force_exclude: bool = False, cache: ResultCache | None = None) -> Iterator[FileResult]:
    """``cache``: results of unchanged files are taken from it and new ones put in it."""
    cores = os.cpu_count() or 1
    jobs = min(jobs or cores, MAX_JOBS_PER_CORE * cores)
    fork = sys.platform == "linux"
    min_bytes = POOL_MIN_BYTES * (1 if fork else SPAWN_FACTOR)
    pending: list[tuple[str, bytes, Settings] | Future[FileResult] | FileResult] = []
    keys: dict[str, str] = {}  # path -> its cache key, for the results to put in the cache
    pool: ProcessPoolExecutor | None = None
    seen_bytes = 0
    broken: tuple[type[Exception], ...] | type[Exception] = ()  # catches nothing until a pool starts
    markers = settings.markers()
    handlers: dict[int, Any] = {}
    # the cache trims once, at the end: mid-run it would evict entries this run has yet to read
    run = cache.run() if cache is not None else contextlib.nullcontext()
    try:
        run.__enter__()
        for item in iter_files(paths, settings, force_exclude):
            if isinstance(item, FileError):
                yield FileResult(item.path, error=item)
                continue
            data = _read(item, markers, settings.max_file_size)
            if data is None:
                continue
            if isinstance(data, FileError):
                yield FileResult(item, error=data)
                continue
            if not might_contain(data, markers):
                continue
            if cache is not None:
                key, hit = lookup(cache, item, data)
                if hit is not None:
                    pending.append(hit)
                    continue
                keys[item] = key  # type: ignore[assignment]
            work = (item, data, settings)
            seen_bytes += len(data)
            if pool is not None:
                pending.append(_submit(pool, work))
                continue
            pending.append(work)
            if jobs > 1 and len(pending) >= POOL_MIN_FILES and seen_bytes >= min_bytes:
                # with fork, the executor forks all workers at the first submit, before its own thread;
                # importing the engine (libcst) first spares each worker its own import
                import cg_lint.engine  # noqa: F401
                handlers = _catch_termination()
                pool, broken = _start_pool(jobs, fork)
                pending = [_submit(pool, w) if isinstance(w, tuple) else w for w in pending]
        for entry in pending:
            if isinstance(entry, FileResult):  # from the cache
                yield entry
                continue
            if isinstance(entry, tuple):
                yield _stored(cache, keys, _lint_data(entry))
                continue
            try:
                yield _stored(cache, keys, entry.result())
            except broken:  # a worker died (a crash in a native parser): report, go on
                path = _path_of(entry)
                yield FileResult(path, error=FileError(path, "internal error: the worker process linting this "
                                                             "file died (please report this)"))
    except BaseException:
        if pool is not None:
            _stop_pool(pool, interrupted=True)
            pool = None
        raise
    finally:
        if pool is not None:
            _stop_pool(pool, interrupted=False)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        run.__exit__(None, None, None)


def _catch_termination() -> dict[int, Any]:
    """SIGTERM and SIGHUP raise ``Interrupted`` while the pool runs (default: die at once, leaving
    the workers to PR_SET_PDEATHSIG where it exists). Only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
            previous[signum] = signal.signal(signum, _raise_interrupted)
    return previous
