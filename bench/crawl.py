"""Lint every .py/.pyi file of the standard library and of site-packages with the real CLI.

    python bench/crawl.py [--jobs N] [--root PATH ...] [--stress]

Prints files, substring candidates, files parsed, findings (by code), errors grouped by message,
crashes (internal errors, tracebacks, a killed process: must be 0) and time. The CLI runs in a
subprocess with PYTHONPATH set to this checkout, once per root; the counting walk is not timed.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cg_lint.config import Settings  # noqa: E402
from cg_lint.config import iter_files  # noqa: E402
from cg_lint.prefilter import markers  # noqa: E402

FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>CG\d+) (?P<msg>.*)$")
SUMMARY = re.compile(r"\((?P<parsed>\d+) files? with custom gradients checked"
                     r"(?:, (?P<errors>\d+) could not be checked)?\)")


def default_roots() -> list[tuple[str, list[str]]]:
    stdlib = sysconfig.get_paths()["stdlib"]
    purelib = sysconfig.get_paths()["purelib"]
    roots = [(stdlib, ["site-packages", "dist-packages"])]
    for site in dict.fromkeys([purelib, sysconfig.get_paths()["platlib"]]):
        if os.path.isdir(site):
            roots.append((site, []))
    return roots


STRESS = ("property", "staticmethod", "classmethod", "len", "functools.wraps", "contextmanager")


def count(root: str, exclude: list[str], decorators: tuple[str, ...]) -> tuple[int, int]:
    settings = Settings(exclude=tuple(exclude), root=root)
    files = candidates = 0
    needles = [m.encode() for m in markers(decorators)]
    for path in iter_files([root], settings):
        if not isinstance(path, str):
            continue
        files += 1
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        candidates += any(n in data for n in needles)
    return files, candidates


def generalise(message: str) -> str:
    """Group similar errors: drop quoted text and numbers."""
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    return re.sub(r"\d+", "N", message)


def crawl(root: str, exclude: list[str], jobs: int | None, config: str | None, decorators: tuple[str, ...]) -> dict:
    files, candidates = count(root, exclude, decorators)
    where = ["--config", config, "--select", "ALL"] if config else ["--isolated"]
    cmd = [sys.executable, "-m", "cg_lint", *where, "--format", "concise", "--exclude", ",".join(exclude) or ","]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run([*cmd, root], capture_output=True, text=True, env=env, cwd=root)
    elapsed = time.perf_counter() - start
    findings = [m for m in map(FINDING.match, proc.stdout.splitlines()) if m]
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    summary = SUMMARY.search(proc.stderr)
    crashes = [line for line in errors if "internal error" in line]
    if "Traceback" in proc.stderr or proc.returncode not in (0, 1, 2):
        crashes.append(f"exit code {proc.returncode}; traceback: {'Traceback' in proc.stderr}")
    return {
        "root": root, "files": files, "candidates": candidates,
        "parsed": int(summary["parsed"]) if summary else None,
        "findings": collections.Counter(m["code"] for m in findings),
        "finding_lines": [m.group(0) for m in findings],
        "errors": collections.Counter(generalise(line.split(": error: ", 1)[1]) for line in errors),
        "error_lines": errors, "crashes": crashes, "time": elapsed, "exit": proc.returncode,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--root", action="append", help="crawl these folders instead (no excludes)")
    parser.add_argument("--show", action="store_true", help="print every finding and error line")
    parser.add_argument("--stress", action="store_true", help="treat common decorators and calls as custom gradients")
    args = parser.parse_args()
    roots = [(r, []) for r in args.root] if args.root else default_roots()
    config = None
    decorators: tuple[str, ...] = ()
    if args.stress:
        import tempfile

        decorators = STRESS
        folder = tempfile.mkdtemp(prefix="cg-lint-crawl-")
        config = os.path.join(folder, "pyproject.toml")
        with open(config, "w", encoding="utf-8") as fh:
            fh.write("[tool.cg_lint]\ndecorators = [" + ", ".join(f'"{d}"' for d in STRESS) + "]\n")
    total = collections.Counter()
    all_errors: collections.Counter[str] = collections.Counter()
    all_findings: collections.Counter[str] = collections.Counter()
    crashes: list[str] = []
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cores"
          + (f"; stress: {', '.join(STRESS)} count as custom_gradient" if args.stress else ""))
    for root, exclude in roots:
        r = crawl(root, exclude, args.jobs, config, decorators)
        label = "stdlib" if exclude else "site-packages" if "site-packages" in root else root
        print(f"{label:14} files {r['files']:6}  candidates {r['candidates']:4}  parsed {r['parsed']}  "
              f"findings {sum(r['findings'].values()):3}  errors {sum(r['errors'].values()):3}  "
              f"crashes {len(r['crashes'])}  time {r['time']:.1f} s  (exit {r['exit']})")
        for key in ("files", "candidates", "parsed"):
            total[key] += r[key] or 0
        total["time"] += r["time"]
        all_errors.update(r["errors"])
        all_findings.update(r["findings"])
        crashes += r["crashes"]
        if args.show and not args.stress:
            for line in r["finding_lines"] + r["error_lines"]:
                print("   ", line)
    print(f"{'total':14} files {total['files']:6}  candidates {total['candidates']:4}  parsed {total['parsed']}  "
          f"findings {sum(all_findings.values())}  errors {sum(all_errors.values())}  crashes {len(crashes)}  "
          f"time {total['time']:.1f} s")
    if all_findings:
        print("findings by code: " + ", ".join(f"{c} {n}" for c, n in sorted(all_findings.items())))
    if all_errors:
        print("errors by message:")
        for message, n in all_errors.most_common():
            print(f"  {n:4}  {message}")
    for line in crashes:
        print("CRASH", line)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
