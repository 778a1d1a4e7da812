"""runtime-check's time on a module of N custom gradients, as a ratio to its floor.

The floor is what any runtime check must pay: one process that imports TensorFlow and computes,
per function, one eager and one traced (tf.function) gradient. Measured in the same run, in
interleaved rounds (so machine load affects all alike; the best of each is reported): the import
of TensorFlow alone, the floor, runtime-check with one worker (-j 1) and with its default (one
worker per core), the same with two modules of N/2 functions each, and with a fresh interpreter
per worker instead of forks of one TensorFlow import (RUNTIME_CHECK_SPAWN=1):

    python bench/bench_runtime.py            # N = 20
    python bench/bench_runtime.py -n 40 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FUNCTION = textwrap.dedent("""
    @tf.custom_gradient
    def f{i}(x):
        def grad(dy):
            return dy * ({k} + tf.cos(x))
        return {k} * x + tf.sin(x), grad
""")

FLOOR = textwrap.dedent("""
    import tensorflow as tf
    import generated

    def make_gradient(fn):
        def gradient(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = fn(x)
            return tape.gradient(y, x)
        return gradient

    x = tf.constant([0.5, -1.25, 2.0])
    for name in sorted(n for n in dir(generated) if n.startswith("f")):
        gradient = make_gradient(getattr(generated, name))
        gradient(x).numpy()
        tf.function(gradient)(x).numpy()
""")


def generate(folder: Path, n: int) -> Path:
    body = "import tensorflow as tf\n" + "".join(
        FUNCTION.format(i=i, k=float(i % 5 + 1)) for i in range(n)
    )
    module = folder / "generated.py"
    module.write_text(body)
    (folder / "floor.py").write_text(FLOOR)
    split = folder / "split"
    split.mkdir()
    for part, functions in (("half_a", range(n // 2)), ("half_b", range(n // 2, n))):
        (split / f"{part}.py").write_text(
            "import tensorflow as tf\n"
            + "".join(FUNCTION.format(i=i, k=float(i % 5 + 1)) for i in functions)
        )
    return module


def timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,), **extra: str) -> float:
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        **extra,
    )
    start = time.perf_counter()
    completed = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if completed.returncode not in ok:
        sys.exit(
            f"bench: {' '.join(argv)} failed ({completed.returncode}): {completed.stderr[-500:]}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-n", type=int, default=20, help="functions in the generated module (default 20)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="interleaved rounds; the best is reported"
    )
    args = parser.parse_args()
    check = [sys.executable, "-m", "runtime_check", "--format", "json"]
    commands = {
        "TensorFlow import alone": [sys.executable, "-c", "import tensorflow"],
        "floor (TF import + 1 eager + 1 traced gradient each)": [sys.executable, "floor.py"],
        "runtime-check -j 1": [*check, "-j", "1", "generated.py"],
        "runtime-check (default -j, one worker per core)": [*check, "generated.py"],
        "runtime-check, two modules of N/2 (default -j)": [*check, "split"],
        "runtime-check, a fresh interpreter per worker (default -j)": [*check, "generated.py"],
    }
    spawn = {"runtime-check, a fresh interpreter per worker (default -j)"}
    best = {name: float("inf") for name in commands}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generate(folder, args.n)
        for _ in range(args.repeat):
            for name, argv in commands.items():
                extra = {"RUNTIME_CHECK_SPAWN": "1"} if name in spawn else {}
                best[name] = min(best[name], timed(argv, folder, **extra))
    floor = best["floor (TF import + 1 eager + 1 traced gradient each)"]
    print(
        f"functions: {args.n}, cores: {len(os.sched_getaffinity(0))}, "
        f"best of {args.repeat} interleaved rounds"
    )
    for name, seconds in best.items():
        print(f"{name + ':':62} {seconds:6.2f} s  {seconds / floor:5.2f}x the floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
