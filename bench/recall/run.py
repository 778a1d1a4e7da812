"""Lint every recall case and report recall: found with the expected code, over all cases.

    python bench/recall/run.py              # the table and the numbers
    python bench/recall/run.py --markdown   # the same table as README.md shows it
    python bench/recall/run.py --checkout ../other   # the cg_lint of another checkout (a baseline)

A case's docstring names the code that should flag it (``Expect: CG003``), or ``new:CGxxx`` when
no rule of this checkout covers it yet (those count as misses). A case is *found* when cg-lint
reports its expected code in it, *wrong* when cg-lint reports any other code in it (a wrong code
is a defect whether or not the right one is there too), *missed* otherwise. Exits 1 on a wrong
code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
CHECKOUT = HERE.parent.parent
_EXPECT = re.compile(r"^Expect: (new:)?(CG\d{3})", re.MULTILINE)
_SOURCE = re.compile(r"^Source: (\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Case:
    name: str
    code: str  # the expected code
    new: bool  # no rule here covers it yet
    source: str
    title: str


@dataclass(frozen=True)
class Result:
    case: Case
    codes: tuple[str, ...]  # every code cg-lint reported in the case, sorted, deduplicated

    @property
    def found(self) -> bool:
        return self.case.code in self.codes

    @property
    def wrong(self) -> tuple[str, ...]:
        return tuple(c for c in self.codes if c != self.case.code)

    @property
    def verdict(self) -> str:
        if self.wrong:
            return "WRONG"
        return "found" if self.found else "missed"


def cases() -> list[Case]:
    out = []
    for path in sorted(CASES.glob("*.py")):
        text = path.read_text()
        expect, source = _EXPECT.search(text), _SOURCE.search(text)
        if not expect or not source:
            sys.exit(f"run.py: {path.name} has no 'Expect:' or 'Source:' line")
        title = text.split('"""', 2)[1].strip().splitlines()[0]
        out.append(Case(path.stem, expect.group(2), bool(expect.group(1)), source.group(1), title))
    return out


def lint(paths: list[Path], checkout: Path = CHECKOUT) -> list[dict]:
    """cg-lint's findings in the cases, each linted as a project of its own: a copy in a folder
    marked as a project root, so that what the case's own code does (its ``graph_check`` traces it)
    decides the trace context, not the modules of the checkout around it (prove.py, or a corpus
    built into bench/corpus/src, which makes that project too large to follow)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    with tempfile.TemporaryDirectory(prefix="cg-recall-") as tmp:
        copies = []
        for path in paths:
            folder = Path(tmp) / path.stem
            folder.mkdir()
            (folder / "pyproject.toml").write_text("")
            copies.append(Path(shutil.copy2(path, folder / path.name)))
        cmd = [sys.executable, "-m", "cg_lint", "--no-cache", "--isolated", "--format", "json", *map(str, copies)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"run.py: cg-lint failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return json.loads(done.stdout)


def results(checkout: Path = CHECKOUT) -> list[Result]:
    known = cases()
    findings = lint([CASES / f"{c.name}.py" for c in known], checkout)
    by_case: dict[str, set[str]] = {}
    for finding in findings:
        by_case.setdefault(Path(finding["path"]).stem, set()).add(finding["code"])
    return [Result(c, tuple(sorted(by_case.get(c.name, ())))) for c in known]


def summary(rows: list[Result]) -> str:
    found = sum(r.found and not r.wrong for r in rows)
    wrong = sum(bool(r.wrong) for r in rows)
    new = sum(r.case.new for r in rows)
    return (f"recall: {found}/{len(rows)} = {100 * found / len(rows):.0f}% found with the expected code; "
            f"{wrong} with a wrong code; {new} expect a rule this checkout does not have")


def markdown(rows: list[Result]) -> str:
    lines = ["| case | expected | cg-lint reports | verdict | source |", "|---|---|---|---|---|"]
    for r in rows:
        expected = f"{r.case.code} (new)" if r.case.new else r.case.code
        lines.append(f"| `{r.case.name}` | {expected} | {', '.join(r.codes) or '-'} | {r.verdict} | "
                     f"[{_short(r.case.source)}]({r.case.source}) |")
    return "\n".join(lines) + "\n\n" + summary(rows) + "\n"


def _short(url: str) -> str:
    parts = url.rstrip("/").split("/")
    return f"{parts[3]}/{parts[4]}#{parts[-1]}" if "github.com" in url and len(parts) >= 7 else url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the README table")
    parser.add_argument("--checkout", type=Path, default=CHECKOUT, help="whose cg_lint to run (default: this one)")
    args = parser.parse_args(argv)
    rows = results(args.checkout.resolve())
    if args.markdown:
        print(markdown(rows), end="")
    else:
        width = max(len(r.case.name) for r in rows)
        for r in rows:
            expected = f"new:{r.case.code}" if r.case.new else r.case.code
            print(f"{r.case.name:{width}}  {expected:9}  {r.verdict:6}  {', '.join(r.codes) or '-'}")
        print(summary(rows))
    return 1 if any(r.wrong for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
