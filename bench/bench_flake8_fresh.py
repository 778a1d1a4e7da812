"""What the CG plugin adds to one fresh ``flake8`` process: the way most editors run flake8.

    python bench/bench_flake8_fresh.py [--repeat 21]

Two real files from the installed TensorFlow, copied to a scratch folder (so that paths and the
cache folder are the bench's own):

- a typical module: ``tensorflow/python/keras/mixed_precision/test_util.py`` (225 lines, two
  ``@tf.custom_gradient`` definitions among ordinary code);
- a file without custom gradients: ``.../mixed_precision/policy.py`` (582 lines);
- a 2,000-line module full of custom gradients (``bench/gen_cg.py``);
- a file with graph-mode findings in a generated 150-module project (``bench/gen_project.py``):
  whether ``tf.function`` reaches its custom gradient is the project's decision, which the plugin
  keeps in the result cache with a digest of what it read (cg_lint/project/snapshot.py). Only the
  baseline and the cached arm run on it. The project is written before the other files' rounds,
  so its modules are older than the 3 s a decision waits for before it is kept.

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
- plain ``python -m flake8`` with the plugin and a warm cache, to show the runner costs nothing;
- edited, helper / edited in a custom gradient, helper: the two edits again, answered by the
  warm helper (cg_lint/helper), started before the rounds in a runtime folder of the bench's own
  and stopped after them. Their CPU time is the flake8 process's plus what the helper spent
  meanwhile (``/proc/PID/stat``): the work moved, it did not vanish.

``--before CHECKOUT`` adds "cached, before" to every file: the cached arm run with another checkout
of cg-lint first on ``PYTHONPATH`` (its bytecode compiled too), so an older version's numbers come
from the same run, round by round. Every other arm runs with ``CG_LINT_NO_HELPER=1``. cg_lint's
bytecode is compiled first (pip compiles on install; a checkout under
``PYTHONDONTWRITEBYTECODE=1`` would measure compilation).

The arms of one round run back to back, rounds repeat (``--repeat``), and the table gives the
median and the best of the wall time and of the CPU time (user + system, from ``wait4``) of each;
ratios are taken against the baseline of the same run. CPU time is the steadier of the two on a
shared machine.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import subprocess
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
from bench.gen_project import generate as generate_project  # noqa: E402

FILES = {
    "typical": "python/keras/mixed_precision/test_util.py",
    "no custom gradients": "python/keras/mixed_precision/policy.py",
    "generated": "",  # bench/gen_cg.py
    "graph-mode, 150-module project": "",  # bench/gen_project.py
}
PROJECT = "graph-mode, 150-module project"
ARMS = ("baseline", "cached", "cached, before", "edited", "edited in a custom gradient", "uncached", "flake8",
        "edited, helper", "edited in a custom gradient, helper")


def edit(text: str, n: int, inside: bool) -> str:
    """``text`` with a statement no earlier round wrote: above the first top-level definition, or
    as the first statement of the first ``grad`` (at its body's indentation)."""
    lines = text.splitlines(keepends=True)
    if not inside:
        at = next(i for i, line in enumerate(lines) if line.startswith(("def ", "@", "class ")))
        return "".join([*lines[:at], f"EDITED_{n} = {n}\n", *lines[at:]])
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def grad(")) + 1
    while not lines[at].strip():  # the body's first statement
        at += 1
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


def cpu_of(pid: int | None) -> float:
    """User + system seconds of a running process (0 without one)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def helper_pid(env: dict[str, str], cwd: Path, wait: float = 120.0) -> int:
    """The pid of the helper answering in ``env``'s runtime folder, once it answers."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        out = subprocess.run([PY, "-m", "cg_lint", "helper", "status"], env=env, cwd=cwd, capture_output=True,
                             text=True).stdout
        if "helper of this cg-lint" in out:
            return int(out.split("pid ")[1].split(",")[0])
        time.sleep(0.2)
    raise SystemExit("bench: the helper did not start")


def measure(repeat: int, before: Path | None = None,
            only: list[str] | None = None) -> dict[str, dict[str, list[float]]]:
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench: tensorflow is not installed")
    tf_dir = Path(list(spec.submodule_search_locations)[0])
    folder = Path(tempfile.mkdtemp(prefix="cg-bench-f8-"))
    # installed packages carry bytecode; a checkout may not (see the docstring)
    compileall.compile_dir(str(ROOT / "cg_lint"), quiet=1)
    if before is not None:
        compileall.compile_dir(str(before / "cg_lint"), quiet=1)
    project_ops = generate_project(folder / "project")  # older than 3 s by its rounds (see above)
    written = time.time()
    helper_env = {**os.environ, "PYTHONPATH": str(ROOT), "CG_LINT_CACHE_DIR": str(folder / "cache"),
                  "XDG_RUNTIME_DIR": str(folder / "run")}
    helper_env.pop("CG_LINT_NO_HELPER", None)
    (folder / "run").mkdir(mode=0o700)
    env = {**helper_env, "CG_LINT_NO_HELPER": "1"}
    before_env = {**env, "PYTHONPATH": str(before)} if before is not None else env
    pid = None
    runner = folder / "runner.py"
    runner.write_text(RUNNER)
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for label, rel in FILES.items():
            if only is not None and label not in only:
                continue
            if label == PROJECT:
                path = project_ops
                original = path.read_text()
                time.sleep(max(0.0, written + 3.5 - time.time()))  # a decision is kept once settled
            else:
                path = folder / (Path(rel).name if rel else "ops.py")
                original = (tf_dir / rel).read_text() if rel else generate(2000)
            has_cg = "custom_gradient" in original
            common = ["--isolated", "--select", "CG", str(path)]
            plugin = [PY, str(runner), "--cg", *common]
            arms = {
                "baseline": [PY, str(runner), "--no-cg", *common],
                "cached": plugin,
                "cached, before": plugin,
                "edited": plugin,
                "edited in a custom gradient": plugin,
                "uncached": [PY, str(runner), "--cg", "--cg-no-cache", *common],
                "flake8": [PY, "-m", "flake8", *common],
                "edited, helper": plugin,
                "edited in a custom gradient, helper": plugin,
            }
            if not has_cg:  # nothing to edit inside
                for name in [n for n in arms if n.startswith("edited")]:
                    del arms[name]
            if label == PROJECT:  # the decision on an unchanged file, against flake8 alone
                arms = {n: c for n, c in arms.items() if n in ("baseline", "cached", "cached, before")}
            if before is None:
                del arms["cached, before"]
            envs = {name: helper_env if name.endswith("helper") else before_env if name.endswith("before") else env
                    for name in arms}
            path.write_text(original)
            if pid is None and any(n.endswith("helper") for n in arms):  # a miss with the helper on starts it
                run([PY, str(runner), "--cg", "--cg-no-cache", *common], helper_env)
                pid = helper_pid(helper_env, folder)
            codes = {name: run(command, envs[name])[2] for name, command in arms.items()}
            # every arm with the plugin reports the same (flake8 alone reports nothing: --select CG)
            assert len({c for n, c in codes.items() if n != "baseline"}) == 1, codes
            times: dict[str, list[float]] = {f"{n} {k}": [] for n in arms for k in ("wall", "cpu")}
            for i in range(repeat):
                for number, (name, command) in enumerate(arms.items()):
                    # each edit is new to the result cache (and to every other arm's edits); every
                    # other arm sees the file as it was
                    inside = "custom gradient" in name
                    text = edit(original, i * len(ARMS) + number, inside) if name.startswith("edited") else original
                    path.write_text(text)
                    helped = name.endswith("helper")
                    spent = cpu_of(pid) if helped else 0.0
                    wall, cpu, code = run(command, envs[name])
                    assert code == codes[name], (name, code)
                    times[f"{name} wall"].append(wall)
                    times[f"{name} cpu"].append(cpu + (cpu_of(pid) - spent if helped else 0.0))
            times["lines"] = [float(original.count("\n"))]
            results[label] = times
        if pid is not None:
            status = subprocess.run([PY, "-m", "cg_lint", "helper", "status"], env=helper_env, cwd=folder,
                                    capture_output=True, text=True).stdout
            results["helper status"] = status  # type: ignore[assignment]
    finally:
        subprocess.run([PY, "-m", "cg_lint", "helper", "stop"], env=helper_env, cwd=folder, capture_output=True)
        deadline = time.monotonic() + 10
        while pid is not None and os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)  # the bench leaves no process behind
        shutil.rmtree(folder)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout of cg-lint: adds its cached arm, measured in the same rounds")
    parser.add_argument("--only", action="append", choices=list(FILES), default=None,
                        help="run only these files (repeatable)")
    args = parser.parse_args()
    results = measure(args.repeat, args.before.resolve() if args.before else None, args.only)
    print(f"fresh flake8 processes, {args.repeat} rounds; ratios against the baseline of this run")
    print(
        "| file | arm | wall median | CPU median | wall best | CPU best | ratio (CPU median) | "
        "ratio (wall median) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    status = results.pop("helper status", None)
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
    if status:
        print(f"\nafter the rounds: {status}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
