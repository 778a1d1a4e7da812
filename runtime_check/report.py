"""Output formats. Everything goes through :func:`format_findings`, so it can later be switched to
cg-lint's shared formatters (``sarif`` and ``github`` will come from there)."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence

from cg_lint.findings import Finding

from .issues import INFO_CODES

FORMATS = ("text", "concise", "json")


def to_finding(data: dict[str, Any]) -> Finding:
    path = data["path"]
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path)
            path = path if relative.startswith("..") else relative
        except ValueError:
            pass
    return Finding(path=path, line=int(data["line"]), column=int(data["column"]), code=data["code"],
                   message=data["message"], function=data.get("function"), mode=data.get("mode"))


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.code, f.message))


def is_failure(finding: Finding) -> bool:
    return finding.code not in INFO_CODES


def format_findings(findings: Sequence[Finding], fmt: str) -> str:
    """``text`` and ``concise``: ``path:line:col CODE message`` per line; ``json``: an array."""
    if fmt == "json":
        keys = ("path", "line", "column", "code", "message", "function", "mode")
        return json.dumps([{k: f.to_json()[k] for k in keys} for f in findings], indent=2)
    if fmt in ("text", "concise"):
        return "\n".join(f"{f.path}:{f.line}:{f.column} {f.code} {f.message}" for f in findings)
    raise ValueError(f"unknown format {fmt!r}")


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
    shown = "; ".join(used[:2])
    return shown if len(used) <= 2 else f"{shown}; +{len(used) - 2} more"
