"""The flake8 plugin's reuse of the previous text's result when an edit leaves the reduced text
as it was (cg_lint/flake8_plugin.py: ``_to_region``/``_from_region``): what it reports after the
edit is what a fresh lint of the edited text reports, positions and messages included."""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from lint_helpers import ROOT

from cg_lint.flake8_plugin import Plugin
from cg_lint.rules import ALL_RULES

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# a rule example where a message names a line ("called under tf.function at line N")
NAMES_A_LINE = '''import tensorflow as tf


@tf.custom_gradient
def f(x):
    def grad(dy):
        return dy * x.numpy()
    return x, grad


@tf.function
def g(x):
    return f(x)
'''


def _sources() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text(encoding="utf-8")) for p in EXAMPLES]
    out += [(f"{r.code}-{i}", s) for r in ALL_RULES for i, s in enumerate(getattr(r, "INVALID", ()))]
    out = [(n, textwrap.dedent(s)) for n, s in out]
    return [*out, ("names-a-line", NAMES_A_LINE)]


def lint(path, text: str, cache: bool = True, extend: tuple[str, ...] = ()) -> list[tuple[int, int, str]]:
    Plugin.parse_options(SimpleNamespace(cg_decorators=[], cg_cache_dir=None, cg_no_cache=not cache,
                                         select=["CG", *extend], extend_select=[], cg_isolated=True))
    path.write_text(text, encoding="utf-8")
    plugin = Plugin(ast.parse(text), text.splitlines(keepends=True), str(path))
    return [(line, column, message) for line, column, message, _ in plugin.run()]


def edited(text: str, at_end: bool = False) -> str | None:
    """A statement the reduction blanks, above the first top-level definition (or at the end)."""
    lines = text.splitlines(keepends=True)
    if at_end:
        return text + ("" if text.endswith("\n") else "\n") + "EDITED = 2\n"
    at = next((i for i, line in enumerate(lines) if line.startswith(("def ", "@", "class "))), None)
    return None if at is None else "".join([*lines[:at], "EDITED = 1\n", "\n", "\n", *lines[at:]])


def reduced(text: str) -> str | None:
    from cg_lint.prefilter import markers
    from cg_lint.prefilter.planned import Planned, plan_file

    planned = plan_file(text, "m.py", markers(), tree=ast.parse(text))
    return planned.parse_text if isinstance(planned, Planned) else None


@pytest.mark.parametrize("name,text", _sources(), ids=[n for n, _ in _sources()])
def test_edit_outside_the_reduction_reports_what_a_fresh_lint_does(name, text, tmp_path, monkeypatch):
    monkeypatch.setenv("CG_LINT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "m.py"
    extend = ("CG018",)  # its messages name lines
    before = lint(path, text, extend=extend)
    import cg_lint.engine

    linted = []
    real = cg_lint.engine.lint_source
    monkeypatch.setattr(cg_lint.engine, "lint_source", lambda *a, **k: linted.append(1) or real(*a, **k))
    for at_end in (True, False):  # the end first: its lines sit where the first lint saw them
        new = edited(text, at_end)
        if new is None:
            continue
        linted.clear()
        assert lint(path, new, extend=extend) == lint(path, new, cache=False, extend=extend), name
        if at_end and reduced(new) == reduced(text):  # no line moved: reused, whatever its messages say
            assert len(linted) == 1, name  # the fresh lint only
    assert lint(path, text, extend=extend) == before


def test_a_message_naming_a_line_is_not_moved(tmp_path, monkeypatch):
    """Messages that name a line are reused only where no line moved."""
    from cg_lint.flake8_plugin import _from_region, _to_region

    finding = {"line": 3, "column": 1, "end_line": None, "code": "CG010", "message": "at line 3)", "fix": None}
    entry = _to_region([finding], [1, 3, 5])
    assert entry is not None and entry["findings"][0]["line"] == 2
    assert _from_region(entry, [1, 3, 5]) == [finding]
    assert _from_region(entry, [1, 4, 6]) is None
    plain = _to_region([{**finding, "message": "no line"}], [1, 3, 5])
    assert plain is not None and _from_region(plain, [1, 4, 6]) == [{**finding, "message": "no line", "line": 4}]
    assert _to_region([{**finding, "line": 2}], [1, 3, 5]) is None  # not a parsed line: not kept
