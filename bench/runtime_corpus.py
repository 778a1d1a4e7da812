"""runtime-check with no configuration on the public corpus: what it exercises and what it reports.

    python bench/runtime_corpus.py [--timeout 30] [--only OWNER+NAME ...] [-v]

The corpus (``bench/corpus/src``, rebuilt by ``bench/corpus/build.py``) holds code no one here
wrote. Every file in it where cg-lint finds a custom-gradient definition is run through
runtime-check's own runner, as ``runtime-check FILE`` would with no configuration, from the
project's root with the project importable (its own top-level modules on ``sys.path``). A file
whose import fails because a package other than TensorFlow, Keras or NumPy is missing is skipped
and listed with the package; one that fails for another reason (an API TF 2 removed, a compiled
op or a data file the corpus does not keep) is listed apart. The measurement is over the files
that import. Per file: the definitions cg-lint finds, how many of them runtime-check reached
with inputs it found and checked eagerly and traced, and every finding
(``bench/RUNTIME-TRIAGE.md`` gives each one a verdict).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime_check.runner import EntryResult

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "corpus" / "src"
sys.path.insert(0, str(ROOT))

# a missing package this environment does not provide: the file cannot be measured here
_MISSING = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")
_PROVIDED = ("tensorflow", "keras", "numpy", "tf_keras", "tensorflow_probability")


def definitions(corpus: Path, only: list[str]) -> list[tuple[Path, list[str]]]:
    """(file, qualnames) for every corpus file where cg-lint finds a custom gradient."""
    from cg_lint.api import find_custom_gradients

    found = []
    for project in sorted(corpus.iterdir()):
        if only and project.name not in only:
            continue
        for path in sorted(project.rglob("*.py")):
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "custom_gradient" in source:
                names = [d.qualname for d in find_custom_gradients(source, str(path))]
                if names:
                    found.append((path, names))
    return found


def _holds(entry: EntryResult, qualname: str) -> bool:
    """The entry runtime-check calls to reach ``qualname``: itself, its outer function, its class."""
    top = qualname.split(".<locals>")[0]
    called_as = re.sub(r"\[[^\[]*\]$", "", entry.id.split(":", 1)[1])
    return entry.qualname == qualname or called_as in (qualname, top) \
        or top.startswith(called_as + ".")


def _real(path: str) -> str:
    return os.path.realpath(path)


def _missing_package(messages: list[str]) -> str | None:
    for message in messages:
        match = _MISSING.search(message)
        if match and match.group(1).split(".")[0] not in _PROVIDED:
            return match.group(1)
    return None


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--only", nargs="+", default=[], help="project folders (owner+name)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("-v", "--verbose", action="store_true", help="every definition with its status")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        # one line, not argparse's usage: the arguments were fine, the folder is missing
        print(f"runtime_corpus.py: error: {args.corpus} is not a folder: rebuild the corpus with "
              "bench/corpus/build.py or pass --corpus", file=sys.stderr)
        sys.exit(2)
    args.corpus = args.corpus.resolve()  # runtime-check reports real paths: the corpus may be a link
    return args


def main() -> int:  # noqa: C901 (one report)
    args = _arguments()
    from runtime_check import runner
    from runtime_check.targets import file_unit

    files = definitions(args.corpus, args.only)
    options = {"jit": False, "numeric": False, "zero_upstream": False, "magnitudes": True, "second_order": False}
    started = time.perf_counter()
    result = runner.RunResult()
    for project in sorted({path.relative_to(args.corpus).parts[0] for path, _ in files}):
        # as if run from the project's root with the project installed: its own top-level modules
        # (``import dnnlib`` beside ``training/``) import
        root = args.corpus / project
        units = [file_unit(path) for path, _ in files if path.is_relative_to(root)]
        sys.path.insert(0, str(root))
        here = os.getcwd()
        os.chdir(root)
        try:
            part = runner.run(units, options, {}, args.timeout, jobs=args.jobs)
        finally:
            os.chdir(here)
            sys.path.remove(str(root))
        result.entries.update(part.entries)
        result.findings.extend(part.findings)
        result.errors.extend(part.errors)
        print(f"{project}: {len(part.entries)} entries, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    elapsed = time.perf_counter() - started
    entries = list(result.entries.values())
    # runtime-check reports where Python found the code; a project linked into the corpus is elsewhere
    called_ok = {_real(c.rsplit(":", 1)[0]) + ":" + c.rsplit(":", 1)[1] for e in entries if e.used for c in e.called}
    skipped: list[tuple[str, str]] = []
    unimportable: list[tuple[str, int, str]] = []
    rows: list[tuple[str, int, int, int]] = []
    reasons: Counter[str] = Counter()
    statuses: list[str] = []
    findings: list[dict[str, object]] = []
    shown_by_real: dict[str, str] = {}
    for path, qualnames in files:
        shown = str(path.relative_to(args.corpus))
        real = _real(str(path))
        shown_by_real[real] = shown
        module_errors = [str(f["message"]) for f in result.findings if _real(str(f["path"])) == real]
        missing = _missing_package(module_errors)
        if missing is not None:
            skipped.append((shown, missing))
            continue
        if module_errors:  # TF1 APIs, a compiled op or a data file the corpus does not keep
            unimportable.append((shown, len(qualnames), module_errors[0].split(": ", 1)[-1][:160]))
            continue
        mine = [e for e in entries if _real(e.path) == real]
        done = 0
        for qualname in qualnames:
            if f"{real}:{qualname}" in called_ok:
                done += 1
                statuses.append(f"{shown}:{qualname}: exercised")
                continue
            holders = [e for e in mine if _holds(e, qualname)]
            why = next((str(f["message"]) for e in holders for f in e.findings if f["code"] == "CG130"), "")
            if not why:
                why = next((f"the check ended: {e.status}" for e in holders if e.status in ("timeout", "crash")), "")
            if not why and any(e.used for e in holders):
                why = "its caller was checked, but no input took the path that reaches it"
            if not why:
                why = ("the module failed to import: " + module_errors[0][:120]) if module_errors \
                    else "not reachable as a module attribute"
            reasons[re.sub(r"'[^']*'", "'…'", why)[:140]] += 1
            statuses.append(f"{shown}:{qualname}: not exercised: {why}")
        own = [f for e in mine for f in e.findings if f["code"] != "CG130"]
        own += [f for f in result.findings if _real(str(f["path"])) == real]
        findings.extend(own)
        rows.append((shown, len(qualnames), done, len(own)))
    total = sum(r[1] for r in rows)
    done_all = sum(r[2] for r in rows)
    print(f"runtime-check on the corpus, no configuration ({elapsed:.0f} s, {len(rows)} files measured, "
          f"{len(unimportable)} do not import, {len(skipped)} skipped for a missing package)\n")
    print("| file | definitions | exercised | findings |")
    print("|---|---|---|---|")
    for shown, n, done, found in rows:
        print(f"| {shown} | {n} | {done} | {found} |")
    print(f"| **all ({len(rows)} files)** | {total} | {done_all} | {sum(r[3] for r in rows)} |")
    print(f"\nexercised: {done_all} of {total} ({100 * done_all / max(1, total):.0f}%)")
    if reasons:
        print("\nnot exercised, by reason:\n")
        for why, count in reasons.most_common():
            print(f"- {count}: {why}")
    if unimportable:
        print(f"\ndo not import with TF 2.21 / Keras 3 ({len(unimportable)} files, "
              f"{sum(n for _, n, _ in unimportable)} definitions; each is one CG122 line):\n")
        for shown, n, why in unimportable:
            print(f"- {shown} ({n}): {why}")
    if skipped:
        print(f"\nskipped ({len(skipped)}): a package this environment does not have\n")
        for shown, missing in skipped:
            print(f"- {shown}: {missing}")
    print(f"\n{len(findings)} finding(s):")
    for f in findings:
        where = shown_by_real.get(_real(str(f["path"]))) or os.path.relpath(str(f["path"]), args.corpus)
        print(f"- {where}:{f['line']} {f['code']} {f['message']}")
    if args.verbose:
        print()
        for status in statuses:
            print(status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
