"""flake8 plugin: ``flake8 --select CG``. Reads the buffer flake8 gives (editors send stdin).

Cost model: a file without the marker costs one substring test (libcst is not even imported); a
candidate reuses flake8's ``ast`` for the prefilter (cg_lint.prefilter), so only the statements that
matter reach libcst. flake8 aborts the whole run when a plugin raises, so nothing escapes ``run``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cg_lint import __version__

if TYPE_CHECKING:
    from cg_lint.engine import Caches


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

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls._decorators = frozenset(getattr(options, "cg_decorators", None) or ())
        cls._markers = markers(cls._decorators)
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
        # imported here so a flake8 run on files without custom gradients never pays for libcst
        from cg_lint.config import Settings
        from cg_lint.engine import Caches, lint_source

        settings = Settings(select=("CG",), extend_select=self._explicit, decorators=self._decorators)
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        # the plugin's caches live as long as flake8's process, which an editor's language server
        # keeps between saves: unchanged statements are not parsed or walked again
        caches = Plugin.caches
        if caches is None:
            caches = Plugin.caches = Caches()
        result = lint_source(source, self.filename, settings, apply_noqa=False, tree=tree, caches=caches)
        error = result.error
        if error is not None and error.message.startswith("internal error"):
            yield (1, 0, _one_line(f"CG999 cg-lint {error.message}"), type(self))
        for f in result.findings:
            yield (f.line, f.column - 1, f"{f.code} {f.message}", type(self))


def _one_line(message: str) -> str:
    return " ".join(message.split())
