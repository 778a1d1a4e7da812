"""Lint one source: prepare it (gates, reduction, parse), build the model, run the enabled rules,
apply noqa."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from cg_lint import prefilter
from cg_lint.analyses.variable_reads import add_variable_reads
from cg_lint.config import Settings
from cg_lint.findings import FileError, FileResult, Finding
from cg_lint.model.builder import ModelBuilder
from cg_lint.noqa import is_suppressed
from cg_lint.prefilter.gc_pause import gc_paused
from cg_lint.prefilter.parse_cache import ChunkCache
from cg_lint.prefilter.planned import Planned
from cg_lint.prefilter.prepared import Prepared, one_line, prepare
from cg_lint.prefilter.reduce import RecentTexts, TextMemo
from cg_lint.rules import ALL_RULES
from cg_lint.rules.base import LintContext
from cg_lint.sources import split_lines
from cg_lint.syntax.index import FileIndex
from cg_lint.syntax.walk import IDLE_FILES, NodeMemo

if TYPE_CHECKING:
    import ast


# libcst's visitors (positions) recurse once per nesting level; deep real code needs more room
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


class Caches:
    """What is kept between the files one owner lints, so unchanged code is not parsed, reduced or
    walked again: the parse per top-level statement (``chunks``), the reduction's per-text facts
    (``reduction``) and the walks and positions of nodes (``nodes``).

    Each is bounded in size, and by age: an edit makes new versions of the statements it touched,
    and what no file has used for some ``IDLE_FILES`` files is dropped (parses, walks) or aged out
    (facts, in generations of that many files). A process that re-lints as an editor types (the
    language server, the flake8 plugin in an editor's process) so keeps what its recent files are
    made of, however long it runs.

    The owner decides the lifetime: the flake8 plugin keeps one for its process (an editor's
    language server re-lints on every save); a call of ``lint_source`` without one uses a fresh one
    for that file only (the CLI sees each statement once).
    """

    def __init__(self, reduction: TextMemo | None = None) -> None:
        self.chunks = ChunkCache()
        # the flake8 plugin shares its own with the planning step, which runs before libcst
        self.reduction: TextMemo = reduction if reduction is not None else RecentTexts()
        self.nodes = NodeMemo()
        self.files = 0

    @contextmanager
    def file(self) -> Iterator[None]:
        """One file's analysis: the kept walks are trimmed to their bounds first, and Python's
        cyclic collector is held until it ends (``cg_lint.prefilter.gc_pause``)."""
        self.files += 1
        if self.files % IDLE_FILES == 0 and isinstance(self.reduction, RecentTexts):
            self.reduction.age()
        self.nodes.trim()
        with gc_paused():
            yield


def might_contain(data: bytes | str, settings: Settings) -> bool:
    return prefilter.might_contain(data, settings.markers())


def lint_source(source: str | bytes, path: str, settings: Settings | None = None,
                apply_noqa: bool = True, *, tree: ast.Module | None = None,
                reduce: bool = True, caches: Caches | None = None, planned: Planned | None = None) -> FileResult:
    """``tree``: the ``ast`` of the same text, when the caller has it (flake8). ``reduce=False``
    hands libcst the whole text of every substring candidate (the reference the prefilter is tested
    against). ``caches``: reuse what earlier calls with the same caches parsed and walked (for
    editors, which re-lint a file on every save); each top-level statement is then parsed alone.
    ``planned``: what ``plan_file`` gave for this source with these arguments (its gates and
    reduction are not run again)."""
    settings = settings or Settings()
    kept = caches if caches is not None else Caches()
    with kept.file():
        prepared = prepare(source, path, settings.markers(), tree=tree, gates=reduce, reduce=reduce,
                           chunks=kept.chunks if caches is not None else None, memo=kept.reduction,
                           planned=planned)
        result = FileResult(path)
        if isinstance(prepared, FileError):
            result.error = prepared
        elif prepared is not None:
            result.parsed = True
            _lint_prepared(result, prepared, path, settings, apply_noqa, kept.nodes)
        return result


def _lint_prepared(result: FileResult, prepared: Prepared, path: str, settings: Settings, apply_noqa: bool,
                   walk: NodeMemo) -> None:
    try:
        result.findings, result.reads_other_files = _run_rules(prepared, path, settings, walk)
    except RecursionError:
        # the prefilter already turned away code nested deeper than the analysis can follow, so
        # this is a cycle the analysis did not guard (a name bound from itself, say): ours to fix
        result.error = FileError(path, "internal error: the analysis recursed too deeply (please report this)")
        return
    except Exception as e:  # never a traceback: the run goes on, the file is reported
        result.error = FileError(path, one_line(f"internal error: {type(e).__name__}: {e} (please report this)"))
        return
    if apply_noqa:
        lines = split_lines(prepared.text)  # as Python numbers them (not at \f)
        result.findings = [
            f for f in result.findings
            if not (0 < f.line <= len(lines) and is_suppressed(lines[f.line - 1], f.code))
        ]


def build_context(prepared: Prepared, path: str, settings: Settings, walk: NodeMemo | None = None) -> LintContext:
    """The index of a prepared file and its records, with every variable read found."""
    index = FileIndex(prepared, path, settings.decorators, walk)
    records = ModelBuilder(index).build()
    add_variable_reads(index, records)
    return LintContext(path=path, index=index, records=records)


def _run_rules(prepared: Prepared, path: str, settings: Settings, walk: NodeMemo) -> tuple[list[Finding], bool]:
    """The findings, and whether they depend on a file other than this one (see FileResult)."""
    rules = [rule(explicit=settings.is_explicit(rule.code)) for rule in ALL_RULES
             if settings.is_enabled(rule.code, path)]
    if not rules:
        return [], False
    ctx = build_context(prepared, path, settings, walk)
    if not ctx.records:
        return [], ctx.index.read_other_modules
    findings: dict[tuple, Finding] = {}
    for rule in rules:
        for f in rule.check(ctx):
            findings.setdefault((f.line, f.column, f.code, f.message), f)
    return sorted(findings.values(), key=Finding.sort_key), ctx.index.read_other_modules
