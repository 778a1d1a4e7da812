"""Every rule's VALID/INVALID examples and doc examples behave as documented."""

from __future__ import annotations

import re

import pytest

from cg_lint.engine import lint_source
from cg_lint.rules import ALL_RULES
from cg_lint.rules.base import Rule, expected_lines

_FENCE = re.compile(r"## (?P<section>Example|Use instead)\n+```python\n(?P<code>.*?)```", re.S)


def _findings(source: str, rule: type[Rule]) -> list[tuple[int, str]]:
    result = lint_source(source, "example.py")
    assert result.error is None, result.error
    return sorted((f.line, f.code) for f in result.findings if f.code == rule.code)


def _cases(attr: str):
    for rule in ALL_RULES:
        for i, source in enumerate(getattr(rule, attr)):
            yield pytest.param(rule, source, id=f"{rule.code}-{i}")


@pytest.mark.parametrize(("rule", "source"), list(_cases("VALID")))
def test_valid_examples_are_quiet(rule: type[Rule], source: str) -> None:
    assert _findings(source, rule) == []


@pytest.mark.parametrize(("rule", "source"), list(_cases("INVALID")))
def test_invalid_examples_report_exactly_the_marked_lines(rule: type[Rule], source: str) -> None:
    expected = sorted((line, code) for line, code in expected_lines(source) if code == rule.code)
    assert expected, "an INVALID example must mark at least one line"
    assert _findings(source, rule) == expected


def _doc_blocks(rule: type[Rule]) -> dict[str, str]:
    blocks = {m["section"]: m["code"] for m in _FENCE.finditer(rule.doc())}
    out = {}
    for section, code in blocks.items():
        if "import tensorflow as tf" not in code:
            code = "import tensorflow as tf\n" + code
        if "np." in code and "import numpy as np" not in code:
            code = "import numpy as np\n" + code
        out[section] = code
    return out


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_doc_example_triggers_and_use_instead_is_quiet(rule: type[Rule]) -> None:
    blocks = _doc_blocks(rule)
    assert set(blocks) == {"Example", "Use instead"}
    assert _findings(blocks["Example"], rule), "the ## Example block must trigger the rule"
    assert _findings(blocks["Use instead"], rule) == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_every_rule_is_documented(rule: type[Rule]) -> None:
    doc = rule.doc()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in doc
    assert rule.VALID and rule.INVALID
