"""runtime-check's time on a module of N custom gradients, as a ratio to its floor.

The floor is what any runtime check must pay: one process that imports TensorFlow and computes,
per function, one eager and one traced (tf.function) gradient. Both are measured in the same run:

    python bench/bench_runtime.py            # N = 20
    python bench/bench_runtime.py -n 50 --repeat 3
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

FUNCTION = textwrap.dedent('''
    @tf.custom_gradient
    def f{i}(x):
        def grad(dy):
            return dy * ({k} + tf.cos(x))
        return {k} * x + tf.sin(x), grad
''')

FLOOR = textwrap.dedent('''
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
''')


def generate(folder: Path, n: int) -> Path:
    body = "import tensorflow as tf\n" + "".join(FUNCTION.format(i=i, k=float(i % 5 + 1)) for i in range(n))
    module = folder / "generated.py"
    module.write_text(body)
    (folder / "floor.py").write_text(FLOOR)
    return module


def timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    start = time.perf_counter()
    completed = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if completed.returncode not in ok:
        sys.exit(f"bench: {' '.join(argv)} failed ({completed.returncode}): {completed.stderr[-500:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="functions in the generated module (default 20)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the minimum is reported")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generate(folder, args.n)
        floor = min(timed([sys.executable, "floor.py"], folder) for _ in range(args.repeat))
        check = min(timed([sys.executable, "-m", "runtime_check", "--format", "json", "generated.py"], folder)
                    for _ in range(args.repeat))
    print(f"functions:           {args.n}")
    print(f"floor (TF import + 1 eager + 1 traced gradient each): {floor:.2f} s")
    print(f"runtime-check:       {check:.2f} s")
    print(f"ratio:               {check / floor:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
