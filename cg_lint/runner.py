"""Lint many files: read and prefilter in this process, parse candidates in a pool when it pays."""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from cg_lint.config import Settings
from cg_lint.engine import FileResult, lint_source, might_contain
from cg_lint.findings import FileError
from cg_lint.files import iter_files

# Below this much candidate source, starting workers costs more than it saves (see bench/).
POOL_MIN_FILES = 4
POOL_MIN_BYTES = 150_000


def _lint_path(args: tuple[str, Settings]) -> FileResult:
    path, settings = args
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        return FileResult(path, error=FileError(path, f"cannot read: {e.strerror or e}"))
    return lint_source(data, path, settings)


def lint_paths(paths: list[str], settings: Settings, jobs: int | None = None,
               force_exclude: bool = False) -> Iterator[FileResult]:
    candidates: list[tuple[str, int]] = []
    for item in iter_files(paths, settings, force_exclude):
        if isinstance(item, FileError):
            yield FileResult(item.path, error=item)
            continue
        try:
            with open(item, "rb") as fh:
                data = fh.read()
        except OSError as e:
            yield FileResult(item, error=FileError(item, f"cannot read: {e.strerror or e}"))
            continue
        if might_contain(data, settings):
            candidates.append((item, len(data)))
    jobs = jobs or os.cpu_count() or 1
    total = sum(size for _, size in candidates)
    work = [(path, settings) for path, _ in candidates]
    if jobs <= 1 or len(candidates) < POOL_MIN_FILES or total < POOL_MIN_BYTES:
        for item in work:
            yield _lint_path(item)
        return
    context = multiprocessing.get_context("fork") if sys.platform == "linux" else None
    # largest files first so one big file does not finish last on its own
    work.sort(key=lambda w: -os.path.getsize(w[0]))
    with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=context) as pool:
        yield from pool.map(_lint_path, work, chunksize=1)
