"""What the CG plugin adds to one fresh ``flake8`` process: the way most editors run flake8.

    python bench/bench_flake8_fresh.py [--repeat 21]

Two real files from the installed TensorFlow, copied to a scratch folder (so that paths and the
cache folder are the bench's own):

- a typical module: ``tensorflow/python/keras/mixed_precision/test_util.py`` (225 lines, two
  ``@tf.custom_gradient`` definitions among ordinary code);
- a file without custom gradients: ``.../mixed_precision/policy.py`` (582 lines);
- a 2,000-line module full of custom gradients (``bench/gen_cg.py``).

Each arm is the same command, ``python runner.py --cg|--no-cg --isolated --select CG FILE``, in a
new process each time:

- baseline: ``--no-cg``, flake8 with the CG entry point hidden from its plugin finder (the plugin
  is not registered at all: what flake8 costs before cg-lint is installed). flake8 runs every
  registered plugin whatever ``--select`` says, so the selection alone cannot give this baseline,
  and ``--disable``/``--extend-ignore`` only filter what is reported;
- cached: ``--cg``, the file unchanged since the previous run (its entry is in the result cache);
- edited: ``--cg``, after an edit outside every custom gradient and what they read (a new
  top-level statement above the first definition, a new one each round: every later line moves);
- edited in a custom gradient: ``--cg``, after an edit inside a ``grad`` (a new statement each
  round): linted again, libcst imported;
- uncached: ``--cg --cg-no-cache``, what every run cost before the result cache;
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
from bench.gen_cg import generate  # noqa: E402

FILES = {
    "typical": "python/keras/mixed_precision/test_util.py",
    "no custom gradients": "python/keras/mixed_precision/policy.py",
    "generated": "",  # bench/gen_cg.py
}
ARMS = ("baseline", "cached", "edited", "edited in a custom gradient", "uncached", "flake8")


def edit(text: str, n: int, inside: bool) -> str:
    """``text`` with a statement no earlier round wrote: above the first top-level definition, or
    as the first statement of the first ``grad`` (at its body's indentation)."""
    lines = text.splitlines(keepends=True)
    if not inside:
        at = next(i for i, line in enumerate(lines) if line.startswith(("def ", "@", "class ")))
        return "".join([*lines[:at], f"EDITED_{n} = {n}\n", *lines[at:]])
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def grad(")) + 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    return "".join([*lines[:at], f"{indent}edited_{n} = {n}\n", *lines[at:]])


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
            path = folder / (Path(rel).name if rel else "ops.py")
            original = (tf_dir / rel).read_text() if rel else generate(2000)
            has_cg = "custom_gradient" in original
            common = ["--isolated", "--select", "CG", str(path)]
            plugin = [PY, str(runner), "--cg", *common]
            arms = {
                "baseline": [PY, str(runner), "--no-cg", *common],
                "cached": plugin,
                "edited": plugin,
                "edited in a custom gradient": plugin,
                "uncached": [PY, str(runner), "--cg", "--cg-no-cache", *common],
                "flake8": [PY, "-m", "flake8", *common],
            }
            if not has_cg:  # nothing to edit inside
                del arms["edited"], arms["edited in a custom gradient"]
            path.write_text(original)
            codes = {name: run(command, env)[2] for name, command in arms.items()}  # warms the cache
            assert len(set(codes.values())) == 1, codes
            times: dict[str, list[float]] = {f"{n} {k}": [] for n in arms for k in ("wall", "cpu")}
            for i in range(repeat):
                for name, command in arms.items():
                    # each edit is new to the result cache; every other arm sees the file as it was
                    text = edit(original, i, name.endswith("custom gradient")) if name.startswith("edited") \
                        else original
                    path.write_text(text)
                    wall, cpu, code = run(command, env)
                    assert code == codes["baseline"] or name == "baseline", (name, code)
                    times[f"{name} wall"].append(wall)
                    times[f"{name} cpu"].append(cpu)
            times["lines"] = [float(original.count("\n"))]
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
        for arm in ARMS:
            if f"{arm} wall" not in times:
                continue
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
