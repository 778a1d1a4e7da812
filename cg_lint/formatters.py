"""Output formats shared by cg-lint and runtime-check."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from cg_lint.findings import Finding

FORMATS = ("text", "concise", "json")


def _use_colour(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def concise_line(f: Finding, colour: bool = False) -> str:
    location = f"{_paint(f.path, '1', colour)}:{f.line}:{f.column}:"
    return f"{location} {_paint(f.code, '1;31', colour)} {f.message}"


def format_findings(findings: Sequence[Finding], fmt: str, sources: dict[str, list[str]] | None = None,
                    stream=None) -> str:
    stream = stream or sys.stdout
    colour = _use_colour(stream)
    if fmt == "json":
        return json.dumps([f.to_json() for f in findings], indent=2) + "\n"
    lines: list[str] = []
    for f in findings:
        lines.append(concise_line(f, colour))
        if fmt == "text" and sources is not None:
            src = sources.get(f.path)
            if src and 0 < f.line <= len(src):
                text = src[f.line - 1].rstrip("\n")
                gutter = f"{f.line:>5} | "
                lines.append(_paint(gutter, "34", colour) + text)
                lines.append(_paint(" " * (len(gutter) - 2) + "| ", "34", colour)
                             + " " * (f.column - 1) + _paint("^", "1;31", colour))
    return "\n".join(lines) + ("\n" if lines else "")
