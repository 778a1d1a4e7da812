"""Output for runtime-check: the linter's formats (one shared implementation), plus the summary table."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from collections.abc import Iterable, Sequence
from typing import Any

from cg_lint.codes import INFO_CODES
from cg_lint.findings import Finding
from cg_lint.formatters import FORMATS as SHARED_FORMATS
from cg_lint.formatters import format_findings as shared_format
from cg_lint.sources import read_lines

from .paths import shown_path

FORMATS = SHARED_FORMATS


def to_finding(data: dict[str, Any]) -> Finding:
    """A finding the worker sent (``Finding.to_json``), with its path relative to here when below."""
    finding = Finding.from_json(data)
    if os.path.isabs(finding.path):
        finding = replace(finding, path=shown_path(finding.path))
    return finding


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.code, f.message))


def is_failure(finding: Finding) -> bool:
    return finding.code not in INFO_CODES


def format_findings(findings: Sequence[Finding], fmt: str) -> str:
    """The same formats as cg-lint's; info codes (no valid inputs) are notes, not errors."""
    sources = read_lines(f.path for f in findings) if fmt == "text" else {}
    return shared_format(findings, fmt, sources, sys.stdout, tool="runtime-check",
                         levels=dict.fromkeys(INFO_CODES, "note")).rstrip("\n")


def summary_table(rows: Sequence[tuple[str, str, str]]) -> str:
    """Rows of (function, result, inputs used) as an aligned plain-text table."""
    header = ("function", "result", "inputs used")
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(3)]
    widths[2] = len(header[2]) if not rows else widths[2]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def describe_inputs(used: Sequence[str]) -> str:
    if not used:
        return "-"
    count = 2 if len(used[0]) <= 24 else 1  # keep the column readable for many-input functions
    shown = "; ".join(used[:count])
    return shown if len(used) <= count else f"{shown}; +{len(used) - count} more"
