"""What a rule is: a code, a one-line message, a doc, and examples that run as tests."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from cg_lint.codes import CODES, Code
from cg_lint.findings import Finding, Fix
from cg_lint.model.records import CustomGradient
from cg_lint.syntax.index import FileIndex

# `# expect: CG003` at the end of a line of an INVALID example marks where a finding must be.
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>CG\d+(?:\s*,\s*CG\d+)*)")


@dataclass
class LintContext:
    """What every rule reads: the file's index and its custom-gradient records (``path`` only
    names the file in findings)."""

    path: str
    index: FileIndex
    records: list[CustomGradient]

    @property
    def cache(self) -> dict[object, object]:
        """Analyses several rules share, computed once per file (e.g. tensor facts per custom
        gradient): the index's memo, which the analyses below the rules use too."""
        return self.index.memo

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.index.position(node)


class Rule:
    """A rule reads the model of a file and yields findings.

    The class docstring is the rule's documentation (ruff's sections: What it does / Why is this bad? /
    Example / Use instead / Fix safety / Known limitations); ``VALID`` and ``INVALID`` are run as tests.
    A rule sets only its ``code``: the name, title and theme are the registry's (``cg_lint.codes``),
    which runtime-check reports under too.
    """

    code: ClassVar[Code]
    name: ClassVar[str]  # kebab-case, stable
    title: ClassVar[str]  # one line, for `cg-lint rule --all`
    theme: ClassVar[str]
    fixable: ClassVar[bool] = False
    # an opinionated rule (like bugbear's B9 group) reports its opinion only when selected by its
    # own code (--select/--extend-select CG018, or ALL); a selection by prefix gets its certain cases
    opinionated: ClassVar[bool] = False
    VALID: ClassVar[tuple[str, ...]] = ()
    INVALID: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is None:
            return
        own = sorted({"name", "title", "theme"} & set(cls.__dict__))
        if code not in CODES or own:
            raise TypeError(f"{cls.__name__}: register {code} in cg_lint/codes.py (its name, title and theme "
                            f"live there{', not in the class: ' + ', '.join(own) if own else ''})")
        entry = CODES[code]
        cls.code, cls.name, cls.title, cls.theme = entry, entry.name, entry.summary, entry.theme

    def __init__(self, explicit: bool = True) -> None:
        self.explicit = explicit  # selected by its own code: report everything, opinions included

    def check(self, ctx: LintContext) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, ctx: LintContext, line: int, column: int, message: str,
                function: str | None = None, fix: Fix | None = None) -> Finding:
        return Finding(path=ctx.path, line=line, column=column, code=self.code, message=message,
                       function=function, fix=fix)

    @classmethod
    def doc(cls) -> str:
        return _dedent(cls.__doc__ or "")


def _dedent(text: str) -> str:
    import textwrap

    first, _, rest = text.partition("\n")
    return (first.strip() + "\n" + textwrap.dedent(rest)).strip() + "\n"


def expected_lines(source: str) -> Iterator[tuple[int, str]]:
    """(line, code) pairs marked with `# expect: CODE` in an example."""
    for number, line in enumerate(source.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                yield number, code.strip()


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe(expr: cst.BaseExpression) -> str:
    """Short source text of an expression, for messages."""
    try:
        text = cst.Module(body=[]).code_for_node(expr)
    except Exception:  # pragma: no cover - code generation does not fail on parsed nodes
        return "..."
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."
