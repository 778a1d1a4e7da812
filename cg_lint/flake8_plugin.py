"""flake8 plugin: ``flake8 --select CG``. Reads the buffer flake8 gives (editors send stdin)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from cg_lint import __version__


class Plugin:
    name = "cg-lint"
    version = __version__
    _decorators: frozenset[str] = frozenset()

    # flake8 makes this a tree plugin because __init__ asks for `tree`; we parse `lines` with libcst
    def __init__(self, tree: ast.AST, lines: list[str], filename: str = "(none)") -> None:
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

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        if "custom_gradient" not in source and not any(d.rsplit(".", 1)[-1] in source for d in self._decorators):
            return
        # imported here so a flake8 run on files without custom gradients never pays for libcst
        from cg_lint.config import Settings
        from cg_lint.engine import lint_source

        settings = Settings(select=("CG",), decorators=self._decorators)
        try:
            result = lint_source(source, self.filename, settings, apply_noqa=False)
        except Exception as e:  # flake8 aborts the whole run when a plugin raises
            yield (1, 0, f"CG999 cg-lint internal error: {type(e).__name__}: {e}", type(self))
            return
        if result.error is not None and result.error.message.startswith("internal error"):
            yield (1, 0, f"CG999 cg-lint {result.error.message}", type(self))
        for f in result.findings:
            yield (f.line, f.column - 1, f"{f.code} {f.message}", type(self))
