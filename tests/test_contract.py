"""The contract between cg-lint and runtime-check: one registry of codes, one project configuration,
one model of where the custom gradients are, and one serialisation of a finding."""

from __future__ import annotations

import ast
import json
import pickle
import re
import textwrap
from pathlib import Path

import pytest

from cg_lint.codes import CODES, lookup
from cg_lint.config import Settings, load_settings
from cg_lint.findings import Edit, Finding, Fix
from cg_lint.rules import ALL_RULES, RULES_BY_CODE
from cg_lint.rules.base import Rule

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"\bCG\d{3}\b")


def test_every_rule_takes_its_name_title_and_theme_from_the_registry() -> None:
    for rule in ALL_RULES:
        entry = CODES[rule.code]
        assert rule.code is entry
        assert (rule.name, rule.title, rule.theme) == (entry.name, entry.summary, entry.theme)
    static = {code for code, entry in CODES.items() if entry.is_rule}
    assert static == set(RULES_BY_CODE)


def test_a_rule_cannot_define_its_own_metadata_or_an_unregistered_code() -> None:
    with pytest.raises(TypeError, match="CG099"):
        type("Unregistered", (Rule,), {"code": "CG099"})
    with pytest.raises(TypeError, match="not in the class: title"):
        type("Retitled", (Rule,), {"code": CODES["CG003"], "title": "another title"})


def test_codes_are_strings_that_keep_their_identity() -> None:
    code = CODES["CG003"]
    assert code == "CG003" and json.dumps([code]) == '["CG003"]'
    assert pickle.loads(pickle.dumps(code)) is code  # the lint pool sends findings between processes
    assert code.page == "docs/rules/CG003.md" and (ROOT / code.page).is_file()
    assert CODES["CG101"].page == "docs/runtime-check.md#checks"
    assert CODES["CG999"].page == "README.md#flake8"
    with pytest.raises(KeyError, match="CG099"):
        lookup("CG099")


def _literals(package: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [(str(path.relative_to(ROOT)), node.lineno, c) for c in CODE.findall(node.value)]
    return found


@pytest.mark.parametrize("package", ["cg_lint", "runtime_check"])
def test_every_code_the_sources_name_is_registered(package: str) -> None:
    unknown = [item for item in _literals(package) if item[2] not in CODES]
    assert unknown == []


def test_every_code_the_docs_name_is_registered() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    unknown = {(p.name, c) for p in pages for c in CODE.findall(p.read_text(encoding="utf-8")) if c not in CODES}
    assert unknown == set()


def test_the_runtime_checks_table_lists_the_registry() -> None:
    text = (ROOT / "docs" / "runtime-check.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (CG1\d\d) \| (.+?) \|$", text, re.M))
    assert rows == {c: e.summary for c, e in CODES.items() if e.runtime_only}


@pytest.mark.parametrize("finding", [
    Finding("m.py", 3, 5, CODES["CG001"], "'f' returns 3 values", function="f", end_line=3, end_column=9,
            fix=Fix("Wrap", (Edit(3, 12, 3, 20, "(a, b)"), Edit(4, 1, 4, 1, "")), safe=False)),
    Finding("pkg/m.py", 9, 1, "CG130", "'g': no valid inputs found", function="g.<locals>.h", mode="eager"),
])
def test_a_finding_survives_json_both_ways(finding: Finding) -> None:
    again = Finding.from_json(json.loads(json.dumps(finding.to_json())))
    assert again == finding and again.fix == finding.fix  # fix does not take part in ==


def test_runtime_discovery_reads_the_linters_model_with_the_configured_decorators(tmp_path: Path) -> None:
    from runtime_check.discover import static_definitions

    source = textwrap.dedent("""
        import tensorflow as tf
        from mylib import smooth_gradient

        def outer(x):
            @smooth_gradient
            def inner(v):
                def grad(dy):
                    return dy
                return v, grad
            return inner(x)

        def remat(x):
            return tf.recompute_grad(lambda v: v * 2.0)(x)
    """)
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\ndecorators = ["mylib.smooth_gradient"]\n')
    path = str(tmp_path / "m.py")
    configured = {d.qualname: d for d in static_definitions(source, path, load_settings(tmp_path / "pyproject.toml"))}
    assert set(configured) == {"outer.<locals>.inner", "remat.<locals>.<lambda>"}
    inner = configured["outer.<locals>.inner"]
    assert (inner.kind, inner.inputs, inner.line, inner.column) == ("nested", ("v",), 7, 9)
    unconfigured = {d.qualname for d in static_definitions(source, path, Settings())}
    assert unconfigured == {"remat.<locals>.<lambda>"}


def test_runtime_targets_walk_like_the_linter(tmp_path: Path) -> None:
    from runtime_check.targets import expand

    (tmp_path / "pyproject.toml").write_text(
        '[tool.cg_lint]\nextend-exclude = ["generated"]\ndecorators = ["lib.cg"]\n')
    for folder in ("src", "generated", ".venv"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "ops.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(x): ...\n")
    (tmp_path / "src" / "own.py").write_text("from lib import cg\n@cg\ndef g(x): ...\n")  # only the configured name
    (tmp_path / "src" / "plain.py").write_text("def h(x): ...\n")
    settings = load_settings(tmp_path / "pyproject.toml")
    units = expand([str(tmp_path)], cwd=tmp_path, settings=settings)
    assert sorted(Path(u.path).relative_to(tmp_path).as_posix() for u in units) == ["src/ops.py", "src/own.py"]


def test_cg_lint_rule_explains_every_registered_code() -> None:
    from lint_helpers import run_cli

    shown = run_cli("rule", "CG101")
    assert shown.returncode == 0
    assert shown.stdout.decode().splitlines()[0] == "# CG101: gradient-shape"
    assert "Reported by runtime-check; see docs/runtime-check.md#checks." in shown.stdout.decode()
    unknown = run_cli("rule", "CG099")
    assert unknown.returncode == 2 and "unknown rule 'CG099'" in unknown.stderr.decode()
