"""What the CG plugin adds to one fresh ``flake8`` process: the way most editors run flake8.

    python bench/bench_flake8_fresh.py [--repeat 21]

Two real files from the installed TensorFlow, copied to a scratch folder (so that paths and the
cache folder are the bench's own):

- a typical module: ``tensorflow/python/keras/mixed_precision/test_util.py`` (225 lines, two
  ``@tf.custom_gradient`` definitions among ordinary code);
- a file without custom gradients: ``.../mixed_precision/policy.py`` (582 lines).

Each arm is the same command, ``python runner.py --cg|--no-cg --isolated --select CG FILE``, in a
new process each time:

- baseline: ``--no-cg``, flake8 with the CG entry point hidden from its plugin finder (the plugin
  is not registered at all: what flake8 costs before cg-lint is installed). flake8 runs every
  registered plugin whatever ``--select`` says, so the selection alone cannot give this baseline,
  and ``--disable``/``--extend-ignore`` only filter what is reported;
- cached: ``--cg``, the file unchanged since the previous run (its entry is in the result cache);
- uncached: ``--cg --cg-no-cache``, what a run after an edit costs (imports libcst, parses);
- plain ``python -m flake8`` with the plugin and a warm cache, to show the runner costs nothing.

The arms of one round run back to back, rounds repeat (``--repeat``), and the table gives the
median and the best of the wall time and of the CPU time (user + system, from ``wait4``) of each;
ratios are taken against the baseline of the same run. CPU time is the steadier of the two on a
shared machine.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
sys.path.insert(0, str(ROOT))
# flake8 with or without the CG plugin: `python RUNNER --cg|--no-cg <flake8 args>`
from bench.bench_lint import F8_RUNNER as RUNNER  # noqa: E402

FILES = {
    "typical": "python/keras/mixed_precision/test_util.py",
    "no custom gradients": "python/keras/mixed_precision/policy.py",
}


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit code) of one fresh process."""
    start = time.perf_counter()
    pid = os.posix_spawn(
        command[0],
        command,
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ],
    )
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def measure(repeat: int) -> dict[str, dict[str, list[float]]]:
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench: tensorflow is not installed")
    tf_dir = Path(list(spec.submodule_search_locations)[0])
    folder = Path(tempfile.mkdtemp(prefix="cg-bench-f8-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CG_LINT_CACHE_DIR": str(folder / "cache")}
    runner = folder / "runner.py"
    runner.write_text(RUNNER)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for label, rel in FILES.items():
            path = folder / Path(rel).name
            shutil.copyfile(tf_dir / rel, path)
            common = ["--isolated", "--select", "CG", str(path)]
            arms = {
                "baseline": [PY, str(runner), "--no-cg", *common],
                "cached": [PY, str(runner), "--cg", *common],
                "uncached": [PY, str(runner), "--cg", "--cg-no-cache", *common],
                "flake8": [PY, "-m", "flake8", *common],
            }
            codes = {
                name: run(command, env)[2] for name, command in arms.items()
            }  # warms the cache
            assert len(set(codes.values())) == 1, codes
            times: dict[str, list[float]] = {f"{n} {k}": [] for n in arms for k in ("wall", "cpu")}
            for _ in range(repeat):
                for name, command in arms.items():
                    wall, cpu, _ = run(command, env)
                    times[f"{name} wall"].append(wall)
                    times[f"{name} cpu"].append(cpu)
            times["lines"] = [float(path.read_text().count("\n"))]
            results[label] = times
    finally:
        shutil.rmtree(folder)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    results = measure(args.repeat)
    print(f"fresh flake8 processes, {args.repeat} rounds; ratios against the baseline of this run")
    print(
        "| file | arm | wall median | CPU median | wall best | CPU best | ratio (CPU median) | "
        "ratio (wall median) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, times in results.items():
        base = {k: statistics.median(times[f"baseline {k}"]) for k in ("wall", "cpu")}
        for arm in ("baseline", "cached", "uncached", "flake8"):
            wall, cpu = times[f"{arm} wall"], times[f"{arm} cpu"]
            wall_med, cpu_med = statistics.median(wall), statistics.median(cpu)
            cells = [
                f"{label} ({int(times['lines'][0])} lines)",
                arm,
                *(f"{1e3 * t:.0f} ms" for t in (wall_med, cpu_med, min(wall), min(cpu))),
                f"{cpu_med / base['cpu']:.3f}",
                f"{wall_med / base['wall']:.3f}",
            ]
            print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
