"""Output formats shared by cg-lint and runtime-check: text, concise, json, sarif, github.

:func:`format_findings` is the single entry point. Runtime findings (``mode`` set) go through it
too; their codes (CG1xx) are not in the rule registry and get a generic SARIF descriptor.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from cg_lint import __version__
from cg_lint.codes import CODES
from cg_lint.findings import Finding

FORMATS = ("text", "concise", "json", "sarif", "github")
LEVELS = ("error", "warning", "note")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def use_colour(stream) -> bool:
    """NO_COLOR (any non-empty value) wins, then FORCE_COLOR, then "is it a terminal"."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0", "false"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def _fixable(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and (f.fix.safe or unsafe_fixes)


def concise_line(f: Finding, colour: bool = False, unsafe_fixes: bool = False) -> str:
    location = f"{_paint(f.path, '1', colour)}:{f.line}:{f.column}:"
    mark = f" {_paint('[*]', '36', colour)}" if _fixable(f, unsafe_fixes) else ""
    return f"{location} {_paint(f.code, '1;31', colour)}{mark} {f.message}"


def format_findings(findings: Sequence[Finding], fmt: str, sources: Mapping[str, Sequence[str]] | None = None,
                    stream=None, *, unsafe_fixes: bool = False, tool: str = "cg-lint",
                    levels: Mapping[str, str] | None = None) -> str:
    """Render findings in ``fmt`` (one of :data:`FORMATS`).

    ``sources`` maps a path to its lines, for the text format's source excerpt; ``stream`` is where
    the output goes (colour only when it is a terminal); ``unsafe_fixes`` marks unsafe fixes as
    applicable; ``tool`` names the driver in SARIF; ``levels`` maps codes to error/warning/note
    (default error), for SARIF and GitHub.
    """
    levels = levels or {}
    if fmt in ("json", "sarif"):
        import json  # ~5 ms at start-up that the text formats do not need
    if fmt == "json":
        return json.dumps([f.to_json() for f in findings], indent=2) + "\n"
    if fmt == "sarif":
        return json.dumps(sarif_log(findings, tool, levels), indent=2) + "\n"
    if fmt == "github":
        return "".join(github_line(f, levels.get(f.code, "error")) + "\n" for f in findings)
    if fmt not in ("text", "concise"):
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    colour = use_colour(stream or sys.stdout)
    lines: list[str] = []
    for f in findings:
        lines.append(concise_line(f, colour, unsafe_fixes))
        if fmt == "text":
            lines.extend(_excerpt(f, (sources or {}).get(f.path), colour, unsafe_fixes))
    return "".join(line + "\n" for line in lines)


# --- text --------------------------------------------------------------------------------------

def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _excerpt(f: Finding, src: Sequence[str] | None, colour: bool, unsafe_fixes: bool) -> list[str]:
    out = []
    if src and 0 < f.line <= len(src):
        text = src[f.line - 1].rstrip("\r\n")
        gutter = f"{f.line:>5} | "
        bar = _paint(" " * (len(gutter) - 2) + "| ", "34", colour)
        # keep tabs so the caret lines up however the terminal expands them
        before = text[: max(f.column - 1, 0)]
        pad = "".join(ch if ch == "\t" else " " * _width(ch) for ch in before)
        span = 1
        if f.end_line == f.line and f.end_column and f.end_column > f.column:
            span = max(1, _width(text[f.column - 1: f.end_column - 1]))
        out.append(_paint(gutter, "34", colour) + text)
        out.append(bar + pad + _paint("^" * span, "1;31", colour))
    if f.mode and f"[{f.mode}" not in f.message:  # runtime messages usually name their modes already
        out.append(_paint("      = ", "34", colour) + f"mode: {f.mode}")
    if f.fix is not None:
        how = "--fix" if f.fix.safe else "--unsafe-fixes"
        label = "fix" if _fixable(f, unsafe_fixes) or f.fix.safe else "unsafe fix"
        out.append(_paint("      = ", "34", colour) + f"{label}: {f.fix.title} ({how})")
    return out


def fix_counts(findings: Sequence[Finding], unsafe_fixes: bool = False) -> tuple[int, int]:
    """(fixable now, fixable only with --unsafe-fixes)."""
    now = sum(1 for f in findings if _fixable(f, unsafe_fixes))
    hidden = sum(1 for f in findings if f.fix is not None and not _fixable(f, unsafe_fixes))
    return now, hidden


# --- github ------------------------------------------------------------------------------------

def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF are escaped (actions/toolkit ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also ':' and ',' (actions/toolkit ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(f: Finding, level: str = "error") -> str:
    command = {"error": "error", "warning": "warning", "note": "notice"}.get(level, "error")
    props = [("file", f.path), ("line", str(f.line)), ("col", str(f.column))]
    if f.end_line is not None:
        props.append(("endLine", str(f.end_line)))
        if f.end_column is not None and f.end_line == f.line:
            props.append(("endColumn", str(f.end_column)))
    title = f.code if not f.mode else f"{f.code} ({f.mode})"
    props.append(("title", title))
    rendered = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{command} {rendered}::{escape_data(f.message)}"


# --- sarif -------------------------------------------------------------------------------------

def artifact_uri(path: str) -> str:
    """Relative to the working directory, forward slashes, percent-encoded; else a file: URI."""
    if path == "-":
        return "stdin"
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(Path.cwd())
        except ValueError:
            return p.as_uri()
    return quote(p.as_posix().removeprefix("./"), safe="/")


def _section(doc: str, heading: str) -> str | None:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    return " ".join(match.group(1).split()) if match else None


def rule_descriptor(code: str, level: str = "error") -> dict:
    entry = CODES.get(code)
    if entry is None:
        return {"id": code, "shortDescription": {"text": f"{code} (not a cg-lint code)"},
                "defaultConfiguration": {"level": level}}
    if not entry.is_rule:
        return {"id": code, "name": entry.name, "shortDescription": {"text": entry.summary},
                "defaultConfiguration": {"level": level}, "properties": {"tags": [entry.theme]}}
    from cg_lint.rules import RULES_BY_CODE  # late: runtime-check imports this module cheaply

    rule = RULES_BY_CODE[code]
    doc = rule.doc()
    body = doc.split("\n", 1)[1].strip()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": _section(doc, "What it does") or rule.title},
        "help": {"text": body, "markdown": body},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": [rule.theme], "fixable": rule.fixable},
    }


def _region(line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> dict:
    region = {"startLine": line, "startColumn": column}
    if end_line is not None:
        region["endLine"] = end_line
        if end_column is not None:
            region["endColumn"] = end_column
    return region


def _sarif_result(f: Finding, rule_index: int, level: str) -> dict:
    uri = artifact_uri(f.path)
    location: dict = {"physicalLocation": {"artifactLocation": {"uri": uri},
                                           "region": _region(f.line, f.column, f.end_line, f.end_column)}}
    if f.function:
        location["logicalLocations"] = [{"fullyQualifiedName": f.function, "kind": "function"}]
    result: dict = {"ruleId": f.code, "ruleIndex": rule_index, "level": level,
                    "message": {"text": f.message}, "locations": [location]}
    if f.fix is not None and f.fix.edits:
        replacements = [{"deletedRegion": _region(e.start_line, e.start_column, e.end_line, e.end_column),
                         "insertedContent": {"text": e.replacement}} for e in f.fix.edits]
        result["fixes"] = [{"description": {"text": f.fix.title},
                            "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": replacements}],
                            "properties": {"safe": f.fix.safe}}]
    if f.mode:
        result["properties"] = {"mode": f.mode}
    return result


def sarif_log(findings: Sequence[Finding], tool: str = "cg-lint", levels: Mapping[str, str] | None = None) -> dict:
    levels = levels or {}
    codes = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(codes)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": tool, "version": __version__,
                                "rules": [rule_descriptor(c, levels.get(c, "error")) for c in codes]}},
            "columnKind": "unicodeCodePoints",
            "results": [_sarif_result(f, index[f.code], levels.get(f.code, "error")) for f in findings],
        }],
    }
