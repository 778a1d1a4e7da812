"""Where the process pool starts to pay: lint k candidate files serially and with a forced pool.

    python bench/pool_threshold.py

Candidates are the TensorFlow + Keras files that mention custom_gradient, in a fixed random order.
The crossover (in candidate bytes) is what runner.POOL_MIN_BYTES is set from.
"""

import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_lint import is_candidate, package_dir, tree_files  # noqa: E402
from cg_lint import runner  # noqa: E402
from cg_lint.config import Settings  # noqa: E402

c = [f for f in tree_files([package_dir("tensorflow"), package_dir("keras")]) if is_candidate(f)]
random.Random(1).shuffle(c)
s = Settings(exclude=())
list(runner.lint_paths(c[:3], s, jobs=1))
for k in (2, 4, 6, 8, 12, 16, 24, len(c)):
    files = c[:k]
    size = sum(os.path.getsize(f) for f in files)
    res = {}
    for mode in ("serial", "pool") * 3:
        runner.POOL_MIN_BYTES = 0 if mode == "pool" else 10**12
        runner.POOL_MIN_FILES = 1
        t = time.perf_counter()
        list(runner.lint_paths(files, s, jobs=2))
        dt = time.perf_counter() - t
        res[mode] = min(res.get(mode, 9), dt)
    pays = "pool pays" if res["pool"] < res["serial"] else ""
    print(f"{k:3} files {size/1e3:7.0f} KB  serial {res['serial']:.3f}  pool {res['pool']:.3f}  {pays}")
