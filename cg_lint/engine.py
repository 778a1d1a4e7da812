"""Lint one source: prefilter, parse once, build the model, run the enabled rules, apply noqa."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import libcst as cst

from cg_lint import prefilter
from cg_lint.analyses.variable_reads import add_variable_reads
from cg_lint.config import Settings
from cg_lint.findings import FileError, FileResult, Finding
from cg_lint.gc_pause import gc_paused
from cg_lint.model.builder import ModelBuilder
from cg_lint.noqa import is_suppressed
from cg_lint.parse_cache import parse_with_cache
from cg_lint.prefilter.lines import Layout
from cg_lint.rules import ALL_RULES
from cg_lint.rules.base import LintContext
from cg_lint.sources import decode
from cg_lint.syntax.index import FileIndex

if TYPE_CHECKING:
    import ast


# libcst's visitors (positions) recurse once per nesting level; deep real code needs more room
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


def might_contain(data: bytes | str, settings: Settings) -> bool:
    return prefilter.might_contain(data, settings.markers())


def lint_source(source: str | bytes, path: str, settings: Settings | None = None,
                apply_noqa: bool = True, *, tree: ast.Module | None = None,
                reduce: bool = True, parse_cache: bool = False) -> FileResult:
    """``tree``: the ``ast`` of the same text, when the caller has it (flake8). ``reduce=False``
    hands libcst the whole text of every substring candidate (the reference the prefilter is tested
    against). ``parse_cache``: reuse the top-level statements parsed by earlier calls in this
    process (cg_lint.parse_cache; for editors, which re-lint a file on every save)."""
    with gc_paused():
        return _lint_source(source, path, settings or Settings(), apply_noqa, tree, reduce, parse_cache)


def _lint_source(source: str | bytes, path: str, settings: Settings, apply_noqa: bool,
                 tree: ast.Module | None, reduce: bool, parse_cache: bool) -> FileResult:
    result = FileResult(path)
    if not might_contain(source, settings):
        return result
    if isinstance(source, bytes):
        text = decode(source, path)
        if isinstance(text, FileError):
            result.error = text
            return result
    else:
        text = source
    parse_text, starts, members = text, None, None
    line_map: list[int] | None = None  # the original line of each parsed line, when empty ones were dropped
    if reduce:
        try:
            plan = prefilter.plan(text, settings.markers(), tree)
        except Exception as e:  # never a traceback: the run goes on, the file is reported
            result.error = FileError(path, _one_line(f"internal error: {type(e).__name__}: {e} (please report this)"))
            return result
        if plan.skip:
            return result
        if plan.error is not None:
            message, line, column = plan.error
            result.error = FileError(path, _one_line(message), line, column)
            return result
        parse_text, starts, members = plan.text, plan.starts, plan.members
        if starts is not None:
            compacted = prefilter.compact(parse_text, starts, members)
            if compacted is not None:
                parse_text, line_map, starts, members = compacted
    try:
        module = parse_with_cache(parse_text, starts) if parse_cache and starts else cst.parse_module(parse_text)
    except cst.ParserSyntaxError as e:
        message = re.sub(r"^(parser error: )?error at \d+:\d+: ", "", e.message)
        line = e.raw_line if line_map is None or not 0 < e.raw_line <= len(line_map) else line_map[e.raw_line - 1]
        result.error = FileError(path, _one_line(f"cannot parse: {message}"), line, e.raw_column + 1)
        return result
    except RecursionError:
        result.error = FileError(path, "cannot parse: nesting too deep")
        return result
    except Exception as e:  # libcst's native parser can fail in other ways; one line, never a traceback
        result.error = FileError(path, _one_line(f"cannot parse: libcst failed: {type(e).__name__}: {e}"))
        return result
    result.parsed = True
    try:
        result.findings = _run_rules(module, text, path, settings, starts, parse_text, members, line_map)
    except RecursionError:
        # the prefilter already turned away code nested deeper than the analysis can follow, so
        # this is a cycle the analysis did not guard (a name bound from itself, say): ours to fix
        result.error = FileError(path, "internal error: the analysis recursed too deeply (please report this)")
        return result
    except Exception as e:  # never a traceback: the run goes on, the file is reported
        result.error = FileError(path, _one_line(f"internal error: {type(e).__name__}: {e} (please report this)"))
        return result
    if apply_noqa:
        lines = text.splitlines()
        result.findings = [
            f for f in result.findings
            if not (0 < f.line <= len(lines) and is_suppressed(lines[f.line - 1], f.code))
        ]
    return result


def _one_line(message: str) -> str:
    return " ".join(message.split()) if "\n" in message or "\r" in message else message


def build_context(module: cst.Module, text: str, path: str, settings: Settings,
                  starts: list[int] | None = None, parsed_text: str | None = None,
                  members: dict[int, list[int]] | None = None, line_map: list[int] | None = None) -> LintContext:
    """``text`` is the file as the user wrote it; ``parsed_text`` what libcst parsed, when reduced
    (``line_map``: the original line of each of its lines, when empty lines were dropped)."""
    layout = None
    if starts:
        source_lines = prefilter.split_lines(parsed_text if parsed_text is not None else text)
        layout = Layout(starts, source_lines, members, line_map)
    index = FileIndex(module, path, settings.decorators, layout)
    records = ModelBuilder(index).build()
    add_variable_reads(index, records)
    return LintContext(path=path, index=index, records=records)


def _run_rules(module: cst.Module, text: str, path: str, settings: Settings,
               starts: list[int] | None = None, parsed_text: str | None = None,
               members: dict[int, list[int]] | None = None, line_map: list[int] | None = None) -> list[Finding]:
    rules = [rule(explicit=settings.is_explicit(rule.code)) for rule in ALL_RULES if settings.is_enabled(rule.code, path)]
    if not rules:
        return []
    ctx = build_context(module, text, path, settings, starts, parsed_text, members, line_map)
    if not ctx.records:
        return []
    findings: dict[tuple, Finding] = {}
    for rule in rules:
        for f in rule.check(ctx):
            findings.setdefault((f.line, f.column, f.code, f.message), f)
    return sorted(findings.values(), key=Finding.sort_key)
