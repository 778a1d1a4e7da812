"""Exactness of the prefilter at scale: the model with and without it, on every candidate file.

    python bench/verify_reduction.py [--stress] [--jobs N] [ROOT ...]

For each file that mentions a marker: gate 2 must not skip a file in which the full model finds a
definition, the reduced text must still be Python, and the model's records and the findings of all
rules must be identical with and without the reduction. Default roots: the stdlib and site-packages.
``--stress`` counts common decorators and calls (property, len...) as custom-gradient names, so
most files have definitions (see crawl.py). Prints the files that differ; exit 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import sysconfig
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STRESS = ("property", "staticmethod", "classmethod", "len", "functools.wraps", "contextmanager")


def check(args: tuple[str, tuple[str, ...]]) -> tuple[str, str] | None:
    path, decorators = args
    import libcst as cst

    from cg_lint import prefilter
    from cg_lint.config import Settings
    from cg_lint.engine import build_context, lint_source
    from cg_lint.prefilter.prepared import Prepared
    from cg_lint.sources import decode

    warnings.simplefilter("ignore")
    settings = Settings(select=("ALL",), decorators=frozenset(decorators))
    data = Path(path).read_bytes()
    if not prefilter.might_contain(data, settings.markers()):
        return None
    text = decode(data, path)
    if not isinstance(text, str):
        return None
    plan = prefilter.plan(text, settings.markers())
    if plan.error is not None:
        return None

    def records(source: str):
        try:
            module = cst.parse_module(source)
        except Exception:
            return None
        ctx = build_context(Prepared(source, module), path, settings)
        return [(r.qualname, r.line, r.column, r.kind, tuple(r.inputs), len(r.returns), len(r.grads),
                 tuple((c.line, c.column) for c in r.call_sites)) for r in ctx.records]

    full = records(text)
    if full is None:
        return None
    if plan.skip:
        return (path, "skipped a file with definitions") if full else None
    try:
        ast.parse(plan.text)
    except SyntaxError as e:
        return path, f"reduced text is not Python: line {e.lineno}: {e.msg}"
    if records(plan.text) != full:
        return path, "records differ"
    a, b = lint_source(text, path, settings), lint_source(text, path, settings, reduce=False)
    if a.findings != b.findings:
        return path, f"findings differ: {len(a.findings)} vs {len(b.findings)}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*")
    parser.add_argument("--stress", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    roots = args.roots or [sysconfig.get_paths()["stdlib"]]
    decorators = STRESS if args.stress else ()
    files = sorted({os.path.join(d, f) for r in roots for d, _, fs in os.walk(r)
                    for f in fs if f.endswith((".py", ".pyi"))})
    bad = 0
    with ProcessPoolExecutor(args.jobs) as pool:
        for result in pool.map(check, [(f, decorators) for f in files], chunksize=16):
            if result is not None:
                bad += 1
                print(*result, sep=": ")
    print(f"{len(files)} files, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
