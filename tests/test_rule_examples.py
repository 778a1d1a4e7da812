"""Every rule's VALID / INVALID examples, and its doc's Example / Use instead, run as tests."""

from __future__ import annotations

import re
import textwrap

import pytest

from cg_lint.config import Settings
from cg_lint.engine import lint_source
from cg_lint.rules import ALL_RULES
from cg_lint.rules.base import expected_lines


def _cases(kind: str):
    for rule in ALL_RULES:
        for i, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, textwrap.dedent(example), id=f"{rule.code}-{kind.lower()}-{i}")


def _codes_at(source: str, code: str) -> set[tuple[int, str]]:
    # the rule selected by its code, as a user reading its page would: opinionated rules report all
    result = lint_source(source, "example.py", Settings(select=(code,)))
    assert result.error is None, result.error
    return {(f.line, f.code) for f in result.findings if f.code == code}


@pytest.mark.parametrize("rule,source", list(_cases("VALID")))
def test_valid_examples_are_quiet(rule, source):
    assert _codes_at(source, rule.code) == set()


@pytest.mark.parametrize("rule,source", list(_cases("INVALID")))
def test_invalid_examples_are_flagged_where_marked(rule, source):
    expected = {(line, code) for line, code in expected_lines(source) if code == rule.code}
    assert expected, "an INVALID example must mark at least one line with '# expect:'"
    assert _codes_at(source, rule.code) == expected


def _doc_block(rule, heading: str) -> str:
    doc = rule.doc()
    section = doc.split(f"## {heading}", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    # doc examples leave out imports, like ruff's; add the usual ones
    if "import tensorflow" not in code:
        code = "import tensorflow as tf\n" + code
    if "np." in code and "import numpy as np" not in code:
        code = "import numpy as np\n" + code
    return code


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_doc_example_is_flagged_and_fix_is_quiet(rule):
    assert _codes_at(_doc_block(rule, "Example"), rule.code), "the doc's Example must trigger the rule"
    assert not _codes_at(_doc_block(rule, "Use instead"), rule.code), "'Use instead' must be clean"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_has_complete_doc(rule):
    doc = rule.doc()
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"):
        assert f"## {heading}" in doc, f"{rule.code} doc lacks '## {heading}'"
    assert rule.VALID and rule.INVALID, "every rule needs valid and invalid examples"
    assert re.fullmatch(r"CG\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9-]+", rule.name)


def test_codes_and_names_are_unique():
    assert len({r.code for r in ALL_RULES}) == len(ALL_RULES)
    assert len({r.name for r in ALL_RULES}) == len(ALL_RULES)


def test_each_rule_has_a_module_named_after_it():
    """One rule per module, in its theme's package (Fixit's layout): CG009 tensor-truth-value of the
    graph-mode theme is cg_lint/rules/graph_mode/tensor_truth_value.py."""
    for rule in ALL_RULES:
        theme, name = (part.replace("-", "_") for part in (rule.theme, rule.name))
        assert rule.__module__ == f"cg_lint.rules.{theme}.{name}", f"{rule.code} lives in {rule.__module__}"


def test_rule_docs_are_up_to_date():
    from cg_lint.docs import render
    from lint_helpers import ROOT

    for name, text in render().items():
        path = ROOT / "docs" / "rules" / name
        assert path.is_file() and path.read_text(encoding="utf-8") == text, (
            f"{path.name} is stale: run 'python -m cg_lint.docs'"
        )
