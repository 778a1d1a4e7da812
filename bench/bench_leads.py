"""What following imported helpers (leads) costs: this checkout against a baseline checkout,
interleaved, as ratios.

    python bench/bench_leads.py BASELINE_CHECKOUT [--repeat R] [PATH ...]

Runs ``cg-lint --no-cache --isolated -j 1`` (or ``--jobs auto``) of each checkout in turn (the order alternates per
round), on the installed TensorFlow + Keras tree unless paths are given (``bench/corpus/src`` has
multi-module packages, so leads), and prints the best and median wall time and CPU time (user +
system of the child) of each, with the ratios this/baseline. CPU time is the steadier number on a
shared machine; wall time moves with the load. Leads answered on that tree are counted in-process.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_dir(name: str) -> str:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        sys.exit(f"bench_leads: {name} is not installed")
    return os.path.dirname(spec.origin)


def run(checkout: str, paths: list[str], jobs: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": checkout}
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "cg_lint", "--no-cache", "--isolated", "--exit-zero", "-j", jobs, *paths],
                   capture_output=True, env=env, check=False)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def count_leads(paths: list[str]) -> tuple[int, int]:
    """(leads left, leads answered as bugs) on ``paths``, with this checkout."""
    sys.path.insert(0, str(ROOT))
    from cg_lint.answering import answer_leads
    from cg_lint.config import Settings
    from cg_lint.engine import lint_source
    from cg_lint.project import TraceContexts

    leads = []
    for top in paths:
        for folder, _, names in os.walk(top, followlinks=True):
            for name in names:
                path = os.path.join(folder, name)
                if not name.endswith(".py"):
                    continue
                try:
                    data = Path(path).read_bytes()
                except OSError:
                    continue
                if b"custom_gradient" in data:
                    leads += [f for f in lint_source(data, path, Settings()).findings if f.lead is not None]
    return len(leads), len(answer_leads(leads, TraceContexts()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("baseline")
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--jobs", default="1", help="cg-lint's -j (1: serial, steadier; auto: the pool)")
    args = parser.parse_intermixed_args()
    paths = args.paths or [package_dir("tensorflow"), package_dir("keras")]
    checkouts = {"baseline": os.path.abspath(args.baseline), "this": str(ROOT)}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in checkouts}
    for i in range(args.repeat):
        order = list(checkouts.items())
        for name, checkout in order if i % 2 == 0 else reversed(order):
            times[name].append(run(checkout, paths, args.jobs))
    left, answered = count_leads(paths)
    print(f"{', '.join(paths)}: {left} leads, {answered} answered as bugs; {args.repeat} interleaved rounds")
    print("| measure | baseline | this | ratio |\n|---|---|---|---|")
    for i, what in enumerate(("wall", "CPU")):
        for how, pick in (("best", min), ("median", statistics.median)):
            a, b = pick(t[i] for t in times["baseline"]), pick(t[i] for t in times["this"])
            print(f"| {what}, {how} | {a:.3f} s | {b:.3f} s | {b / a:.3f} |")


if __name__ == "__main__":
    main()
