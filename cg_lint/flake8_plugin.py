"""flake8 plugin: ``flake8 --select CG``. Reads the buffer flake8 gives (editors send stdin).

Configuration is cg-lint's own: ``[tool.cg_lint]`` of the nearest pyproject.toml above each file,
found and read as the CLI and the server do (cg_lint.config), once per folder and process. flake8's
options add to it (``--cg-decorators``, codes named in full by ``--select``/``--extend-select``);
flake8 then filters what the plugin reports with its own selection, ignores and ``# noqa``.

Cost model: a file without a marker costs one substring test (libcst is not even imported); a
candidate reuses flake8's ``ast`` for the prefilter (cg_lint.prefilter), so only the statements that
matter reach libcst. flake8 aborts the whole run when a plugin raises, so nothing escapes ``run``.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cg_lint import __version__

if TYPE_CHECKING:
    from cg_lint.config import Settings
    from cg_lint.engine import Caches
    from cg_lint.project import TraceContexts
    from cg_lint.findings import FileResult
    from cg_lint.prefilter.reduce import TextMemo
    from cg_lint.result_cache import ResultCache


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
    reduction: TextMemo | None = None  # the reduction's per-text facts (no libcst), shared with caches
    trace_contexts: TraceContexts | None = None  # the projects this process has looked at
    _cache_dir: str | None = None  # None: [tool.cg_lint] cache-dir, else the default folder
    _use_cache = True
    # the warm helper (cg_lint/helper) serves a flake8 given one file, as editors run it; a run
    # over many (CI, pre-commit, -j) lints in its own processes, in parallel. --cg-no-helper: never
    _use_helper = True
    # --cg-isolated: no [tool.cg_lint] (flake8's own --isolated never reaches plugins' options)
    _isolated = False
    # per folder: its settings (flake8's options applied), or why its configuration cannot be used
    _settings: dict[str, Settings | str] = {}

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
        option_manager.add_option(
            "--cg-no-helper", default=False, action="store_true", parse_from_config=True,
            help="lint in this process, never in cg-lint's warm helper (also $CG_LINT_NO_HELPER=1)",
        )
        option_manager.add_option(
            "--cg-isolated", default=False, action="store_true", parse_from_config=True,
            help="ignore [tool.cg_lint] in pyproject.toml (read by default, as cg-lint does)",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls._decorators = frozenset(getattr(options, "cg_decorators", None) or ())
        cls._markers = markers(cls._decorators)
        cls._cache_dir = getattr(options, "cg_cache_dir", None) or None
        cls._use_cache = not getattr(options, "cg_no_cache", False)
        named = list(getattr(options, "filenames", None) or ())
        one_file = len(named) == 1 and (named[0] == "-" or not os.path.isdir(named[0]))
        cls._use_helper = one_file and not getattr(options, "cg_no_helper", False)
        # codes flake8 selects by their full name (--extend-select CG018): opinionated rules report
        # their opinions only then, as with cg-lint's own --select
        chosen = [*(getattr(options, "select", None) or ()), *(getattr(options, "extend_select", None) or ())]
        cls._explicit = tuple(c for c in chosen if isinstance(c, str) and len(c) == 5 and c.startswith("CG"))
        cls._isolated = bool(getattr(options, "cg_isolated", False))
        cls._settings = {}

    @classmethod
    def settings_for(cls, filename: str) -> Settings | str:
        """The settings for a file flake8 names (for stdin, its --stdin-display-name): ``[tool.cg_lint]``
        from the file's folder upward (the current folder when that does not exist, as the CLI),
        with flake8's options on top; or the configuration error, on one line."""
        folder = os.path.dirname(os.path.abspath(filename))
        if not os.path.isdir(folder):
            folder = os.getcwd()
        kept = cls._settings.get(folder)
        if kept is None:
            kept = cls._settings[folder] = cls._load(folder)
        return kept

    @classmethod
    def _load(cls, folder: str) -> Settings | str:
        from pathlib import Path

        from cg_lint.config import ConfigError, Settings, load_settings

        try:
            base = Settings(root=folder) if cls._isolated else load_settings(start=Path(folder))
        except ConfigError as e:
            return _one_line(str(e))
        except RecursionError:  # tomllib recurses once per nesting level of a value
            return f"a pyproject.toml above {folder}: invalid TOML: nested too deeply"
        extra = tuple(c for c in cls._explicit if c not in base.extend_select)
        return base.with_cli(decorators=base.decorators | cls._decorators,
                             extend_select=base.extend_select + extra if extra else None)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        try:
            yield from self._run()
        except Exception as e:  # flake8 aborts the whole run when a plugin raises
            yield (1, 0, _one_line(f"CG999 cg-lint internal error: {type(e).__name__}: {e}"), type(self))

    def _run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        # flake8's own names first: most files are turned away here without reading a pyproject.toml
        candidate = any(m in source for m in self._markers)
        settings = self.settings_for(self.filename)
        if isinstance(settings, str):
            if candidate:  # said on the files it would have checked, not on every file flake8 reads
                yield (1, 0, f"CG999 cg-lint configuration error: {settings}", type(self))
            return
        if not (candidate or any(m in source for m in settings.markers())):
            return
        if settings.is_excluded(self.filename):  # as the server and `cg-lint --force-exclude`
            return
        # an unchanged file's result from an earlier run: no libcst, no parse (a fresh process each
        # save is how most editors run flake8); built from the entry, not from findings
        cache = key = None
        if self._use_cache:
            from cg_lint.result_cache import open_cache, settings_key

            # cg-cache-dir (flake8's config) and cache-dir ([tool.cg_lint]) are the repository's
            # choices: used only when confined to the project (cg_lint/cache_trust.py)
            cache, _warning = open_cache(settings_key(settings, "flake8", apply_noqa=False),
                                         project_choice=self._cache_dir or settings.cache_dir,
                                         project_root=settings.root if settings.config_file else os.getcwd())
            key = cache.key(self.filename, source.encode("utf-8", "surrogatepass")) if cache else None
            entry = cache.get_raw(key) if cache is not None and key is not None else None
            if entry is not None:
                yield from self._in_context(entry["findings"], source, settings, cache, key)
                return
        if len(source) > settings.max_file_size:  # characters >= bytes / 4: bounded either way
            size = len(source.encode("utf-8", "surrogatepass"))
            if size > settings.max_file_size:
                from cg_lint.sources import too_large

                yield (1, 0, f"CG999 cg-lint {too_large(self.filename, size, settings.max_file_size).message}",
                       type(self))
                return
        if self._use_helper and settings.flake8_helper:
            # a fresh process (an editor's save) asks the warm helper: no libcst import, no parse
            # here; None (no helper yet, or any failure) means lint in this process
            from cg_lint.helper.client import ask, usable

            found = ask(self.filename, source, settings, cache) if usable() else None
            if found is not None:
                for line, column, text in found:
                    yield (line, column, text, type(self))
                return
        yield from self._lint(source, settings, cache, key)

    def _lint(self, source: str, settings: Settings, cache: ResultCache | None,
              key: str | None) -> Iterator[tuple[int, int, str, type]]:
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        # the gates and the reduction need no libcst: a file they turn away, or whose reduced text
        # was linted before (an edit outside every custom gradient and what they read), is answered
        # without importing it
        from cg_lint.prefilter.planned import Planned, plan_file
        from cg_lint.prefilter.reduce import RecentTexts

        if Plugin.reduction is None:
            Plugin.reduction = RecentTexts()  # ages with the caches (cg_lint.engine.Caches.file)
        planned = plan_file(source, self.filename, settings.markers(), tree=tree, memo=Plugin.reduction)
        if planned is None:
            return
        region = None
        if cache is not None and isinstance(planned, Planned):
            region = cache.key(self.filename, planned.region(), kind="region")
            entry = cache.get_raw(region)
            moved = None if entry is None else _from_region(entry, planned.line_map)
            if moved is not None:
                yield from self._in_context(moved, source, settings, cache, key)
                return
        # imported here so a flake8 run on files without custom gradients never pays for libcst
        from cg_lint.engine import Caches, lint_source

        # the plugin's caches live as long as flake8's process, which an editor's language server
        # keeps between saves: unchanged statements are not parsed or walked again
        caches = Plugin.caches
        if caches is None:
            caches = Plugin.caches = Caches(Plugin.reduction)
        result = lint_source(source, self.filename, settings, apply_noqa=False, tree=tree, caches=caches,
                             planned=planned if isinstance(planned, Planned) else None)
        if cache is not None and key is not None:
            cache.put(key, result)
            if region is not None and isinstance(planned, Planned) and result.error is None and (
                    not result.reads_other_files):
                kept = _to_region([f.to_json() for f in result.findings], planned.line_map)
                if kept is not None:
                    cache.put_raw(region, kept)
        yield from self._report(result, settings, cache, key)

    def _report(self, result: FileResult, settings: Settings, cache: ResultCache | None = None,
                key: str | None = None) -> Iterator[tuple[int, int, str, type]]:
        error = result.error
        # a file the limits turn away is said once, like an internal error; one that does not parse
        # is flake8's own E999
        if error is not None and error.message.startswith(("internal error", "not analysed")):
            yield (1, 0, _one_line(f"CG999 cg-lint {error.message}"), type(self))
        yield from self._in_context([f.to_json() for f in result.findings], "".join(self.lines), settings,
                                    cache, key)

    def _in_context(self, findings: list[dict[str, Any]], source: str, settings: Settings,
                    cache: ResultCache | None = None, key: str | None = None) -> Iterator[tuple[int, int, str, type]]:
        """Graph-mode findings only where the project around the file can trace the definition
        (the CLI's decision, cg_lint/project: read from the files on disk, this file's text included)."""
        from cg_lint.project.decided import project_facts_matter

        if any(project_facts_matter(f["code"]) or f.get("lead") for f in findings):
            findings = self._decided(findings, source, settings, cache, key)
        for f in findings:
            yield (f["line"], f["column"] - 1, f"{f['code']} {f['message']}", type(self))

    def _decided(self, findings: list[dict[str, Any]], source: str, settings: Settings,
                 cache: ResultCache | None, key: str | None) -> list[dict[str, Any]]:
        """The project's decision on ``findings``, kept in the result cache under the file's key
        and a digest of what the search reads (cg_lint/project/snapshot.py): a fresh process with
        nothing changed checks a ``stat`` per module instead of searching them. Findings with a
        ``lead`` (read from other modules) are decided afresh."""
        context = None
        settled = False
        if cache is not None and key is not None and not any(f.get("lead") for f in findings):
            from cg_lint.project.snapshot import snapshot

            taken = snapshot(self.filename)
            if taken is not None:
                digest, settled = taken
                context = cache.key(self.filename, f"{key}\0{digest}".encode(), kind="context")
                entry = cache.get_raw(context)
                if entry is not None:
                    return entry["findings"]
        from cg_lint.answering import answer_leads
        from cg_lint.findings import Finding
        from cg_lint.project import TraceContexts, in_context

        if Plugin.trace_contexts is None:
            Plugin.trace_contexts = TraceContexts()
        Plugin.trace_contexts.overlay(self.filename, source)
        # leads (questions about the project's other modules) first: cg_lint/answering.py
        answered = answer_leads([Finding.from_json(f) for f in findings], Plugin.trace_contexts)
        kept = [f.to_json() for f in in_context(answered, settings.trace_context, Plugin.trace_contexts)]
        if cache is not None and context is not None and settled:
            cache.put_raw(context, {"parsed": True, "findings": kept, "error": None})
        return kept


# messages that name a line of the file ("called under tf.function at line 12"): such a result is
# reused only where every parsed line sits where it sat
_NAMES_A_LINE = re.compile(r"\bline \d")


def _to_region(findings: list[dict[str, Any]], line_map: list[int] | None) -> dict[str, Any] | None:
    """A result cache entry for the reduced text: findings with lines in the parsed text's
    numbering (what ``_from_region`` moves to where an edited file has them); None when a line
    cannot be placed there. Fixes are left out: flake8 never shows them."""
    inverse = None if line_map is None else {line: parsed for parsed, line in enumerate(line_map, 1)}
    out = []
    for f in findings:
        g = {**f, "fix": None}
        for k in ("line", "end_line"):
            if inverse is not None and g.get(k) is not None:
                parsed = inverse.get(g[k])
                if parsed is None:
                    return None
                g[k] = parsed
        out.append(g)
    pinned = any(_NAMES_A_LINE.search(f["message"]) for f in out)
    return {"parsed": True, "findings": out, "error": None,
            "pinned": pinned, "lines": line_map if pinned else None}


def _from_region(entry: dict[str, Any], line_map: list[int] | None) -> list[dict[str, Any]] | None:
    """The entry's findings where this text's parsed lines sit; None (a miss) when its messages
    name lines that moved, or a line is out of place."""
    if entry.get("error") is not None or "pinned" not in entry:
        return None
    if entry["pinned"] and entry.get("lines") != line_map:
        return None
    out = []
    for f in entry["findings"]:
        g = dict(f)
        for k in ("line", "end_line"):
            parsed = g.get(k)
            if line_map is not None and parsed is not None:
                if type(parsed) is not int or not 0 < parsed <= len(line_map):
                    return None
                g[k] = line_map[parsed - 1]
        out.append(g)
    return out


def _one_line(message: str) -> str:
    return " ".join(message.split())
