"""Render one Markdown page per rule from the rule classes, so code and docs cannot drift.

``python -m cg_lint.docs`` writes ``docs/rules/``; ``--check`` exits 1 when the pages are stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cg_lint.rules import ALL_RULES
from cg_lint.rules.base import Rule


def page(rule: type[Rule]) -> str:
    fix = "Fix is available" if rule.fixable else "No automatic fix"
    return (f"# {rule.code}: {rule.name}\n\n*{rule.title}.* Theme: {rule.theme}. {fix}.\n\n"
            + rule.doc().split("\n", 1)[1].strip() + "\n")


def code_page(code: str) -> str | None:
    """The page of any registered code: a rule's full page, else what the code registry says
    (runtime-check's checks, the tool's own CG999). None for a code nobody registered."""
    from cg_lint.codes import CODES
    from cg_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code)
    if rule is not None:
        return page(rule)
    entry = CODES.get(code)
    if entry is None:
        return None
    return (f"# {entry}: {entry.name}\n\n{entry.summary[0].upper()}{entry.summary[1:]}. Theme: {entry.theme}. "
            f"Reported by {'runtime-check' if entry.runtime_only else 'cg-lint'}; see {entry.page}.\n")


def index() -> str:
    rows = "\n".join(f"| [{r.code}]({r.code}.md) | `{r.name}` | {r.theme} | {r.title} |" for r in ALL_RULES)
    return ("# Rules\n\nGenerated from the rule classes by `python -m cg_lint.docs`; "
            "`cg-lint rule CODE` prints the same page.\n\n| code | name | theme | what it flags |\n"
            f"|---|---|---|---|\n{rows}\n")


def render() -> dict[str, str]:
    pages = {f"{r.code}.md": page(r) for r in ALL_RULES}
    pages["README.md"] = index()
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cg_lint.docs")
    parser.add_argument("--out", type=Path, default=Path("docs/rules"))
    parser.add_argument("--check", action="store_true", help="exit 1 if the pages differ from the rules")
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = args.out / name
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"stale rule docs (run 'python -m cg_lint.docs'): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
