"""flake8 plugin: ``flake8 --select CG``. Reads the buffer flake8 gives (editors send stdin).

Cost model: a file without the marker costs one substring test (libcst is not even imported); a
candidate reuses flake8's ``ast`` for the prefilter (cg_lint.prefilter), so only the statements that
matter reach libcst. flake8 aborts the whole run when a plugin raises, so nothing escapes ``run``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cg_lint import __version__

if TYPE_CHECKING:
    from cg_lint.engine import Caches
    from cg_lint.project import TraceContexts
    from cg_lint.findings import FileResult


def markers(decorators: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """What a file must contain to be looked at (as cg_lint.prefilter.markers, without importing it)."""
    return ("custom_gradient", *sorted({d.rsplit(".", 1)[-1] for d in decorators} - {"custom_gradient"}))


class Plugin:
    name = "cg-lint"
    version = __version__
    _decorators: frozenset[str] = frozenset()
    _explicit: tuple[str, ...] = ()
    _markers: tuple[str, ...] = markers()
    caches: Caches | None = None  # created on the first file that needs them (libcst imported then)
    trace_contexts: TraceContexts | None = None  # the projects this process has looked at
    _cache_dir: str | None = None  # None: the default folder (cg_lint/result_cache.py)
    _use_cache = True

    # flake8 makes this a tree plugin because __init__ asks for `tree`
    def __init__(self, tree: ast.AST | None, lines: list[str], filename: str = "(none)") -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.add_option(
            "--cg-decorators", default="", parse_from_config=True, comma_separated_list=True,
            help="extra qualified names that mean tf.custom_gradient (in-house wrappers)",
        )
        option_manager.add_option(
            "--cg-cache-dir", default=None, parse_from_config=True,
            help="cg-lint's result cache folder (default: $CG_LINT_CACHE_DIR or ~/.cache/cg-lint)",
        )
        option_manager.add_option(
            "--cg-no-cache", default=False, action="store_true", parse_from_config=True,
            help="neither read nor write cg-lint's result cache",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls._decorators = frozenset(getattr(options, "cg_decorators", None) or ())
        cls._markers = markers(cls._decorators)
        cls._cache_dir = getattr(options, "cg_cache_dir", None) or None
        cls._use_cache = not getattr(options, "cg_no_cache", False)
        # codes flake8 selects by their full name (--extend-select CG018): opinionated rules report
        # their opinions only then, as with cg-lint's own --select
        chosen = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        cls._explicit = tuple(c for c in chosen if isinstance(c, str) and len(c) == 5 and c.startswith("CG"))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        try:
            yield from self._run()
        except Exception as e:  # flake8 aborts the whole run when a plugin raises
            yield (1, 0, _one_line(f"CG999 cg-lint internal error: {type(e).__name__}: {e}"), type(self))

    def _run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        if not any(m in source for m in self._markers):
            return
        # an unchanged file's result from an earlier run: no libcst, no parse (a fresh process each
        # save is how most editors run flake8); built from the entry, not from findings
        cache = key = None
        if self._use_cache:
            from cg_lint.result_cache import flake8_key, open_cache

            # cg-cache-dir may come from the repository's flake8 config: confined to the project
            cache, _warning = open_cache(flake8_key(self._decorators, self._explicit),
                                         project_choice=self._cache_dir, project_root=os.getcwd())
            key = cache.key(self.filename, source.encode("utf-8", "surrogatepass")) if cache else None
            entry = cache.get_raw(key) if cache is not None and key is not None else None
            if entry is not None:
                yield from self._in_context(entry["findings"], source)
                return
        # imported here so a flake8 run on files without custom gradients never pays for libcst
        from cg_lint.config import Settings
        from cg_lint.engine import Caches, lint_source

        settings = Settings(select=("CG",), extend_select=self._explicit, decorators=self._decorators)
        if len(source) > settings.max_file_size:  # characters >= bytes / 4: bounded either way
            size = len(source.encode("utf-8", "surrogatepass"))
            if size > settings.max_file_size:
                from cg_lint.sources import too_large

                yield (1, 0, f"CG999 cg-lint {too_large(self.filename, size, settings.max_file_size).message}",
                       type(self))
                return
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        # the plugin's caches live as long as flake8's process, which an editor's language server
        # keeps between saves: unchanged statements are not parsed or walked again
        caches = Plugin.caches
        if caches is None:
            caches = Plugin.caches = Caches()
        result = lint_source(source, self.filename, settings, apply_noqa=False, tree=tree, caches=caches)
        if cache is not None and key is not None:
            cache.put(key, result)
        yield from self._report(result)

    def _report(self, result: FileResult) -> Iterator[tuple[int, int, str, type]]:
        error = result.error
        # a file the limits turn away is said once, like an internal error; one that does not parse
        # is flake8's own E999
        if error is not None and error.message.startswith(("internal error", "not analysed")):
            yield (1, 0, _one_line(f"CG999 cg-lint {error.message}"), type(self))
        yield from self._in_context([f.to_json() for f in result.findings], "".join(self.lines))

    def _in_context(self, findings: list[dict[str, Any]], source: str) -> Iterator[tuple[int, int, str, type]]:
        """Graph-mode findings only where the project around the file can trace the definition
        (the CLI's decision, cg_lint/project: read from the files on disk, this file's text included)."""
        from cg_lint.project import project_facts_matter

        if any(project_facts_matter(f["code"]) for f in findings):
            from cg_lint.findings import Finding
            from cg_lint.project import TraceContexts, in_context

            if Plugin.trace_contexts is None:
                Plugin.trace_contexts = TraceContexts()
            Plugin.trace_contexts.overlay(self.filename, source)
            kept = in_context([Finding.from_json(f) for f in findings], "auto", Plugin.trace_contexts)
            findings = [f.to_json() for f in kept]
        for f in findings:
            yield (f["line"], f["column"] - 1, f"{f['code']} {f['message']}", type(self))


def _one_line(message: str) -> str:
    return " ".join(message.split())
