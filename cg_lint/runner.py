"""Lint many files: walk, read and substring-filter here; lint the candidates here or in a pool.

The pool starts only once the candidates seen so far hold enough source to pay for it (forking the
workers and shipping results back costs ~30 ms; linting costs ~0.1 ms per line of candidate source,
most of which the prefilter then skips or blanks). Candidates found before the pool started are
handed to it at once, later ones as the walk finds them, so parsing overlaps the walk. Results come
back in walk order, so output does not depend on timing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from cg_lint.config import Settings, iter_files
from cg_lint.findings import FileError, FileResult
from cg_lint.prefilter import might_contain

if TYPE_CHECKING:  # the pool's modules (~20 ms) are imported only when a run starts one
    from concurrent.futures import Future, ProcessPoolExecutor

# Below ~250 KB of candidate source the pool does not pay (measured on TF candidates: 186 KB serial
# 57 ms vs pool 61 ms; 300 KB serial 98 ms vs pool 69 ms; see bench/README.md).
POOL_MIN_BYTES = 250_000
POOL_MIN_FILES = 4
# spawn (macOS, Windows) re-imports everything in each worker: it needs much more work to pay
SPAWN_FACTOR = 8


def _lint_data(args: tuple[str, bytes, Settings]) -> FileResult:
    from cg_lint.engine import lint_source  # libcst: imported only once a file needs it

    path, data, settings = args
    try:
        return lint_source(data, path, settings)
    except Exception as e:  # never a traceback: the run goes on, the file is reported
        return FileResult(path, error=FileError(path, f"internal error: {type(e).__name__}: {e} (please report this)"))


def _read(path: str) -> bytes | FileError:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        return FileError(path, f"cannot read: {e.strerror or e}")


def _start_pool(jobs: int, fork: bool) -> tuple[ProcessPoolExecutor, type[Exception]]:
    """The pool, and the exception its futures raise when a worker dies."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("fork" if fork else None)
    return ProcessPoolExecutor(jobs, mp_context=context), BrokenProcessPool


def _submit(pool: ProcessPoolExecutor, work: tuple[str, bytes, Settings]) -> Future[FileResult]:
    future = pool.submit(_lint_data, work)
    future.cg_lint_path = work[0]  # type: ignore[attr-defined]
    return future


def _path_of(future: Future) -> str:
    return getattr(future, "cg_lint_path", "?")


def lint_paths(paths: list[str], settings: Settings, jobs: int | None = None,
               force_exclude: bool = False) -> Iterator[FileResult]:
    jobs = jobs or os.cpu_count() or 1
    fork = sys.platform == "linux"
    min_bytes = POOL_MIN_BYTES * (1 if fork else SPAWN_FACTOR)
    pending: list[tuple[str, bytes, Settings] | Future[FileResult]] = []
    pool: ProcessPoolExecutor | None = None
    seen_bytes = 0
    broken: tuple[type[Exception], ...] | type[Exception] = ()  # catches nothing until a pool starts
    markers = settings.markers()
    try:
        for item in iter_files(paths, settings, force_exclude):
            if isinstance(item, FileError):
                yield FileResult(item.path, error=item)
                continue
            data = _read(item)
            if isinstance(data, FileError):
                yield FileResult(item, error=data)
                continue
            if not might_contain(data, markers):
                continue
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
                pool, broken = _start_pool(jobs, fork)
                pending = [_submit(pool, w) if isinstance(w, tuple) else w for w in pending]
        for entry in pending:
            if isinstance(entry, tuple):
                yield _lint_data(entry)
                continue
            try:
                yield entry.result()
            except broken:  # a worker died (a crash in a native parser): report, go on
                path = _path_of(entry)
                yield FileResult(path, error=FileError(path, "internal error: the worker process linting this "
                                                             "file died (please report this)"))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
