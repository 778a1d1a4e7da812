"""Lint the rebuilt corpus and compare every finding with the verdicts in ``triage.tsv``.

    python bench/corpus/lint.py            # default settings, as a new user runs it
    python bench/corpus/lint.py -- --trace-context always
    python bench/corpus/lint.py --manifest heldout.tsv   # the held-out set (src-heldout/)

Prints each finding with its verdict (``untriaged`` for one the table does not know), the
verdicts the table holds that the run no longer reports, and the precision: true bugs over all
findings. Exits 1 when a finding is untriaged, so a change that adds findings must triage them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build  # noqa: E402  (beside this script: where each manifest's projects are built)

CHECKOUT = HERE.parent.parent

Key = tuple[str, str, int, str]


def verdicts() -> dict[Key, tuple[str, str]]:
    with open(HERE / "triage.tsv", newline="") as f:
        return {(r["repo"], r["path"], int(r["line"]), r["code"]): (r["verdict"], r["class"])
                for r in csv.DictReader(f, delimiter="\t")}


def run(src: Path, extra: list[str]) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(CHECKOUT)}
    cmd = [sys.executable, "-m", "cg_lint", "--no-cache", "--isolated", "--format", "json", *extra, str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"cg-lint failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return json.loads(done.stdout)


def key_of(finding: dict, src: Path) -> Key:
    rel = Path(finding["path"]).resolve().relative_to(src.resolve())
    folder, *rest = rel.parts
    return folder.replace("+", "/", 1), "/".join(rest), finding["line"], finding["code"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", type=Path, default=build.MANIFEST,
                        help="which set: manifest.tsv (default) or heldout.tsv; picks the default --src")
    parser.add_argument("--src", type=Path, help="the rebuilt corpus (build.py); default src/ or src-heldout/")
    parser.add_argument("extra", nargs="*", help="more cg-lint arguments (after --)")
    args = parser.parse_args(argv)
    args.manifest = build.resolve_manifest(args.manifest)
    if not args.manifest.is_file():
        print(f"lint.py: no manifest at {args.manifest}", file=sys.stderr)
        return 2
    args.src = args.src or build.default_src(args.manifest)
    if not args.src.is_dir():
        print(f"lint.py: {args.src} does not exist: run bench/corpus/build.py --manifest {args.manifest.name} first",
              file=sys.stderr)
        return 2
    table = verdicts()
    found = {key_of(f, args.src): f for f in run(args.src, args.extra)}
    counts: Counter[str] = Counter()
    for key, finding in sorted(found.items()):
        verdict, why = table.get(key, ("untriaged", ""))
        counts[verdict] += 1
        print(f"{verdict:15} {key[0]}/{key[1]}:{key[2]} {key[3]} {why}  {finding['message'][:100]}")
    # triage.tsv holds both sets' verdicts: count as gone only this manifest's repositories
    repos = {entry.repo for entry in build.read_manifest(args.manifest)}
    gone = Counter(table[k][0] for k in table if k not in found and k[0] in repos)
    total = sum(counts.values())
    print(f"\n{total} findings: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    print("no longer reported: " + (", ".join(f"{n} {v}" for v, n in sorted(gone.items())) or "none"))
    if total:
        print(f"precision: {counts['true bug']}/{total} = {counts['true bug'] / total:.0%} true bugs")
    return 1 if counts["untriaged"] else 0


if __name__ == "__main__":
    sys.exit(main())
