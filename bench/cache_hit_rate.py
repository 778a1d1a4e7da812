"""The result cache's hit rate on a tree of more candidate files than it keeps (``MAX_ENTRIES``).

Usage: ``python bench/cache_hit_rate.py [FILES] [RUNS]`` (default 25,000 files, 4 runs).

Each file mentions ``custom_gradient`` (so it is looked up and kept) in a comment (so linting it
is cheap and the cache dominates). Run 1 is cold; the others lint the same tree again, the last
after editing 1% of the files. Printed: per run, the hits among lookups, the entries on disk and
the wall time. A least-recently-used trim in the middle of a run over more files than the bound
evicts, in scan order, exactly the entries the run is about to read, so every warm run misses;
the cache trims once, at the end of a run, and never removes what that run used.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cg_lint.config import Settings  # noqa: E402
from cg_lint.result_cache import ResultCache, settings_key  # noqa: E402
from cg_lint.runner import lint_paths  # noqa: E402


class CountingCache(ResultCache):
    lookups = hits = 0

    def get_raw(self, key: str):
        data = super().get_raw(key)
        self.lookups += 1
        self.hits += data is not None
        return data


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 25_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory() as tmp:
        tree, cache_dir = Path(tmp, "tree"), Path(tmp, "cache")
        os.environ["CG_LINT_CACHE_DIR"] = str(cache_dir)  # the secret too: nothing of the user's
        for i in range(files):
            folder = tree / f"d{i // 1000:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"m{i:06d}.py").write_text(f"# no custom_gradient here ({i})\nx = {i}\n")
        settings = Settings(root=str(tree))
        print(f"{files} candidate files; cache bound {sys.modules['cg_lint.result_cache'].MAX_ENTRIES}")
        for run in range(1, runs + 1):
            if run == runs and runs > 2:
                for i in range(0, files, 100):
                    path = tree / f"d{i // 1000:03d}" / f"m{i:06d}.py"
                    path.write_text(path.read_text() + "# edited\n")
            cache = CountingCache(cache_dir, settings_key(settings, "cli"))
            start = time.perf_counter()
            for _ in lint_paths([str(tree)], settings, jobs=1, cache=cache):
                pass
            elapsed = time.perf_counter() - start
            kept = sum(1 for _ in os.scandir(cache_dir / cache.folder.name))
            rate = cache.hits / cache.lookups if cache.lookups else 0.0
            label = "cold" if run == 1 else "1% edited" if run == runs and runs > 2 else "warm"
            print(f"run {run} ({label}): {cache.hits}/{cache.lookups} hits ({rate:.1%}), "
                  f"{kept} entries on disk, {elapsed:.1f} s")


if __name__ == "__main__":
    main()
