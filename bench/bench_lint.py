"""Speed of cg-lint against ruff and flake8, measured in one run and printed as ratios.

    python bench/bench_lint.py [--quick N] [--repeat R] [--skip-flake8] [--per-save]

1. ``cg-lint`` vs ``ruff check --select F --no-cache`` on the installed TensorFlow + Keras tree.
2. ``flake8 --select F,CG`` vs ``flake8 --select F`` without the plugin, on the same tree (or, with
   ``--quick N``, on a deterministic subset of N files that includes every candidate file).
3. What an editor pays per save: the plugin's ``run()`` on a generated 2,000-line file full of
   custom gradients, in-process (the first call in a fresh process, which imports libcst; warm calls
   on the unchanged file; warm calls where each save edits one more function, as typing does; and,
   for reference, warm calls without the parse cache), and the wall time of
   ``flake8 --select CG file`` vs ``flake8 --select E501 file``.
4. Scaling: cg-lint on 10, 100, 1,000 and all files of the tree, serial and with the pool.

Every command is a subprocess with PYTHONPATH set to this checkout; each timing is the best of R
runs, and the commands of one comparison are interleaved so load affects both alike. flake8 runs
every installed plugin whatever ``--select`` says, so "without the plugin" hides the CG entry point
from flake8's plugin finder (see F8_RUNNER); that is also reported for the per-save comparison.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.gen_cg import generate  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SAVES = 20  # in-process saves per kind (unchanged, edited, without the cache): best and median
PY = sys.executable
# flake8 with or without the CG plugin: `python F8_RUNNER --cg|--no-cg <flake8 args>`
F8_RUNNER = textwrap.dedent('''\
    import sys
    import flake8.plugins.finder as finder
    found = finder._find_importlib_plugins
    if sys.argv.pop(1) == "--no-cg":
        finder._find_importlib_plugins = lambda: (p for p in found() if p.entry_point.name != "CG")
    from flake8.main.cli import main
    sys.exit(main(sys.argv[1:]))
''')


def package_dir(name: str) -> str:
    """Where a package is installed, without importing it (importing TensorFlow takes seconds)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"bench: {name} is not installed")
    return list(spec.submodule_search_locations)[0]


def tree_files(roots: list[str]) -> list[str]:
    out = []
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith((".py", ".pyi")))
    return out


def is_candidate(path: str) -> bool:
    return b"custom_gradient" in Path(path).read_bytes()


def subset(files: list[str], n: int, keep: list[str] = ()) -> list[str]:
    """N files spread evenly over the sorted tree, plus ``keep``; deterministic."""
    if n >= len(files):
        return list(files)
    step = len(files) / n
    chosen = {files[int(i * step)] for i in range(n)} | set(keep)
    return sorted(chosen)


def best_of(repeat: int, *commands: list[str], ok=(0, 1)) -> list[float]:
    """Best wall time of each command over ``repeat`` interleaved rounds."""
    return [min(t) for t in timings(repeat, *commands, ok=ok)]


def timings(repeat: int, *commands: list[str], ok=(0, 1)) -> list[list[float]]:
    """Wall times of each command over ``repeat`` interleaved rounds."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for i, cmd in enumerate(commands):
            start = time.perf_counter()
            proc = subprocess.run(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            elapsed = time.perf_counter() - start
            if proc.returncode not in ok:
                raise SystemExit(f"bench: {' '.join(cmd[:6])} ... exited {proc.returncode}: {proc.stderr[-500:]}")
            times[i].append(elapsed)
    return times


def cg_lint(paths: list[str], jobs: int | None = None) -> list[str]:
    # --no-cache: ruff runs with --no-cache too; a warm result cache would measure only the walk
    cmd = [PY, "-m", "cg_lint", "--isolated", "--exclude=", "--no-cache", "-q"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    return cmd + paths


def ruff(paths: list[str]) -> list[str]:
    return ["ruff", "check", "--isolated", "--select", "F", "--no-cache", "-q", *paths]


def per_save(runner: str, repeat: int, saves: int) -> dict:
    """``repeat``: flake8 runs per command (best of); ``saves``: in-process saves per kind."""
    folder = Path(tempfile.mkdtemp(prefix="cg-bench-"))
    source = folder / "ops_full_of_custom_gradients.py"
    source.write_text(generate(2000))
    probe = textwrap.dedent(f'''\
        import ast, json, re, statistics, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        path = {str(source)!r}
        text = open(path).read()
        from cg_lint.flake8_plugin import Plugin

        def save(text, cache=True):
            # flake8 hands each run a fresh ast and fresh lines: built outside the timed region
            lines = text.splitlines(keepends=True)
            tree = ast.parse(text)
            start = time.perf_counter()
            if cache:
                out = list(Plugin(tree, lines, path).run())
            else:  # what run() did before the parse cache
                out = lint_source("".join(lines), path, settings, apply_noqa=False, tree=tree)
            return time.perf_counter() - start, out

        def edit(text, k):
            # one function changed per save: a constant in the k-th op's body
            name = ops[k % len(ops)]
            edited = re.sub(rf"(def {{name}}\\(.*\\n.*\\n    y = )", rf"\\g<1>{{k + 2}}.0 * ", text, count=1)
            assert edited != text
            return edited

        first, out = save(text)
        from cg_lint.config import Settings
        from cg_lint.engine import lint_source
        settings = Settings(select=("CG",))
        ops = re.findall(r"^def (op_\\d+)\\(", text, re.M)
        n = {saves}
        edited, unchanged, whole, current = [], [], [], text
        for k in range(n):  # interleaved, so that machine load affects both alike
            current = edit(current, k)
            edited.append(save(current)[0])  # one function differs from the previous save
            unchanged.append(save(current)[0])  # saved again as it is
        # after, not interleaved: a whole parse replaces every cached node, which an editor's
        # sequence of saves never does
        for k in range(n):
            current = edit(current, n + k)
            whole.append(save(current, cache=False)[0])
        stats = lambda xs: [min(xs), statistics.median(xs)]
        print(json.dumps({{"first": first, "warm": stats(unchanged), "edit": stats(edited), "whole": stats(whole),
                          "findings": len(out), "lines": text.count("\\n"), "n": n}}))
    ''')
    proc = subprocess.run([PY, "-c", probe], env=ENV, capture_output=True, text=True, check=True)
    times = json.loads(proc.stdout)
    f8 = [PY, runner]
    walls = best_of(repeat, [*f8, "--cg", "--isolated", "--select", "CG", str(source)],
                    [*f8, "--cg", "--isolated", "--select", "E501", str(source)],
                    [*f8, "--no-cg", "--isolated", "--select", "E501", str(source)])
    shutil.rmtree(folder)
    ms = lambda pair: [1e3 * t for t in pair]  # noqa: E731
    return {"first_ms": 1e3 * times["first"], "warm_ms": ms(times["warm"]), "edit_ms": ms(times["edit"]),
            "whole_ms": ms(times["whole"]), "n": times["n"], "findings": times["findings"], "lines": times["lines"],
            "f8_cg": walls[0], "f8_e501": walls[1], "f8_e501_no_plugin": walls[2]}


def per_save_rows(save: dict) -> list[tuple[str, str, str, str]]:
    def best_median(key: str) -> str:
        best, median = save[key]
        return f"{best:.0f} / {median:.0f} ms"

    n, lines = save["n"], save["lines"]
    return [
        (f"plugin run() per save, {lines}-line file, warm, unchanged (best / median of {n})",
         best_median("warm_ms"), "", "<= 50 ms"),
        (f"plugin run() per save, warm, one function edited per save (best / median of {n})",
         best_median("edit_ms"), "", "<= 50 ms"),
        (f"the same without the plugin's caches (lint_source without caches=; best / median of {n})",
         best_median("whole_ms"), "", ""),
        ("plugin run() per save, first call in a fresh process (imports libcst)", f"{save['first_ms']:.0f} ms", "", ""),
        ("flake8 --select CG vs --select E501 (same file; both run the plugin)",
         f"{save['f8_cg']:.2f} s / {save['f8_e501']:.2f} s", f"{save['f8_cg'] / save['f8_e501']:.2f}", ""),
        ("flake8 --select CG vs --select E501 without the plugin",
         f"{save['f8_cg']:.2f} s / {save['f8_e501_no_plugin']:.2f} s",
         f"{save['f8_cg'] / save['f8_e501_no_plugin']:.2f}", ""),
    ]


def print_rows(rows: list[tuple[str, str, str, str]]) -> None:
    print("| measure | times | ratio | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _has(tool: str) -> bool:
    """ruff is run as a command, flake8 as a module of this interpreter."""
    return shutil.which(tool) is not None if tool == "ruff" else importlib.util.find_spec(tool) is not None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", type=int, metavar="N", help="flake8 on N files (all candidates included)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-flake8", action="store_true")
    parser.add_argument("--per-save", action="store_true", help="only the per-save measurements (item 3)")
    args = parser.parse_args()
    missing = [tool for tool, needed in (("ruff", not args.per_save), ("flake8", True)) if needed and not _has(tool)]
    if missing:
        print(f"bench_lint: needs {' and '.join(missing)}; install with: pip install -e '.[bench]'",
              file=sys.stderr)
        return 2
    # installed packages carry bytecode (pip compiles on install); a checkout may not, and compiling
    # cg_lint's modules on every run would be timed as startup
    compileall.compile_dir(str(ROOT / "cg_lint"), quiet=1)
    if args.per_save:
        runner = Path(tempfile.mkdtemp(prefix="cg-bench-")) / "flake8_runner.py"
        runner.write_text(F8_RUNNER)
        print_rows(per_save_rows(per_save(str(runner), max(args.repeat, 5), SAVES)))
        shutil.rmtree(runner.parent)
        return 0

    roots = [package_dir("tensorflow"), package_dir("keras")]
    files = tree_files(roots)
    candidates = [f for f in files if is_candidate(f)]
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    runner = Path(tempfile.mkdtemp(prefix="cg-bench-")) / "flake8_runner.py"
    runner.write_text(F8_RUNNER)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; tree: tensorflow + keras, {len(files)} files, "
          f"{lines:,} lines, {len(candidates)} mention custom_gradient; best of {args.repeat}\n")
    rows: list[tuple[str, str, str, str]] = []

    cg_times, rf_times = timings(args.repeat, cg_lint(roots), ruff(roots))
    cg, rf = min(cg_times), min(rf_times)
    rows.append(("cg-lint vs ruff (TF + Keras), best", f"{cg:.2f} s / {rf:.2f} s", f"{cg / rf:.2f}", "<= 1.0"))
    cg, rf = statistics.median(cg_times), statistics.median(rf_times)
    rows.append((f"cg-lint vs ruff (TF + Keras), median of {args.repeat}", f"{cg:.2f} s / {rf:.2f} s",
                 f"{cg / rf:.2f}", "<= 1.0"))

    if not args.skip_flake8:
        chosen = subset(files, args.quick, candidates) if args.quick else files
        targets = chosen if args.quick else roots
        with_cg, without = best_of(1 if not args.quick else args.repeat,
                                   [PY, str(runner), "--cg", "--isolated", "--select", "F,CG", *targets],
                                   [PY, str(runner), "--no-cg", "--isolated", "--select", "F", *targets])
        label = f"{len(chosen)} files (--quick, all {len(candidates)} candidates)" if args.quick else "whole tree"
        rows.append((f"flake8 F+CG vs flake8 F, no plugin ({label})", f"{with_cg:.2f} s / {without:.2f} s",
                     f"{with_cg / without:.3f}", "<= 1.05"))

    rows += per_save_rows(per_save(str(runner), max(args.repeat, 5), SAVES))
    print_rows(rows)

    print("\nscaling (cg-lint on evenly spread subsets of the tree; startup = an empty folder):")
    empty = tempfile.mkdtemp(prefix="cg-bench-empty-")
    (start_time,) = best_of(args.repeat, cg_lint([empty]))
    print(f"startup {start_time:.2f} s\n")
    print("| files | candidates | -j1 | pool (auto) | per file -j1 | per file pool |")
    print("|---|---|---|---|---|---|")
    for n in (10, 100, 1000, len(files)):
        chosen = subset(files, n)
        targets = roots if len(chosen) == len(files) else chosen
        serial, pooled = best_of(args.repeat, cg_lint(targets, jobs=1), cg_lint(targets))
        n_cand = len(set(chosen) & set(candidates))
        per_file = [1e3 * (t - start_time) / len(chosen) for t in (serial, pooled)]
        print(f"| {len(chosen)} | {n_cand} | {serial:.2f} s | {pooled:.2f} s | "
              f"{per_file[0]:.2f} ms | {per_file[1]:.2f} ms |")
    shutil.rmtree(empty)
    return 0


if __name__ == "__main__":
    sys.exit(main())
