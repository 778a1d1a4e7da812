"""The one record every frontend (CLI, flake8, runtime-check) reports."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 1-based (line, column) positions."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """A fix is a set of edits applied together; ``safe`` fixes run with ``--fix``."""

    title: str
    edits: tuple[Edit, ...]
    safe: bool = True


@dataclass(frozen=True)
class Finding:
    """One problem. ``line`` and ``column`` are 1-based (flake8 gets ``column - 1``)."""

    path: str
    line: int
    column: int
    code: str
    message: str
    function: str | None = None
    end_line: int | None = None
    end_column: int | None = None
    fix: Fix | None = field(default=None, compare=False)
    # runtime-check: "eager", "tf.function", ... ; None for static findings
    mode: str | None = None
    # a question about another module of the project (JSON with a "kind"), which the file alone
    # cannot answer: the front ends answer it on every run and never show it unanswered
    # (cg_lint/engine.py: answer_leads)
    lead: str | None = field(default=None, compare=False)
    # runtime-check: the inputs a finding was seen with, and how they were chosen ("from the call
    # at ops.py:12", "guessed", ...); absent from the JSON when None (static findings)
    inputs: str | None = None
    origin: str | None = None

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        """The JSON output's record, and what runtime-check's worker sends its parent."""
        data = asdict(self)
        data["fix"] = None if self.fix is None else {
            "title": self.fix.title,
            "safe": self.fix.safe,
            "edits": [asdict(e) for e in self.fix.edits],
        }
        if data["lead"] is None:
            del data["lead"]  # only the result cache ever holds one
        for optional in ("inputs", "origin"):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """The inverse of ``to_json`` (keys it does not know are ignored; optional ones may be absent)."""
        fix = data.get("fix")
        return cls(
            path=data["path"], line=int(data["line"]), column=int(data["column"]), code=data["code"],
            message=data["message"], function=data.get("function"),
            end_line=data.get("end_line"), end_column=data.get("end_column"),
            fix=None if fix is None else Fix(fix["title"], tuple(Edit(**e) for e in fix["edits"]),
                                             fix.get("safe", True)),
            mode=data.get("mode"), lead=data.get("lead"), inputs=data.get("inputs"), origin=data.get("origin"),
        )


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked (missing, undecodable, unparsable)."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def one_line(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}:{self.column or 1}"
        return f"{where}: error: {self.message}"


@dataclass
class FileResult:
    """What linting one file gave: findings, or the one error that stopped it."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    parsed: bool = False  # False when the prefilter skipped the file
    # what it found depends on another file the linter read (a module handing out TensorFlow as
    # `tf`): its own bytes do not key it, so it is never cached
    reads_other_files: bool = False
