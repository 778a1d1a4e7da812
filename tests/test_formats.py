"""Every output format, produced by the real CLI on files with findings."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from cg_lint.findings import Edit, Finding, Fix
from cg_lint.formatters import FORMATS, escape_data, escape_property, format_findings, github_line
from lint_helpers import ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

# CG001 (fixable) at 8:5 and CG003 at 14:9
SOURCE = """\
import tensorflow as tf


@tf.custom_gradient
def split_scale(x):
    def grad(dlow, dhigh):
        return dlow * 2.0 + dhigh * 3.0
    return x * 2.0, x * 3.0, grad


@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w
    return x * w, grad
"""
CG001 = "'split_scale' returns 3 values (x * 2.0, x * 3.0, grad); TF unpacks exactly two: return (x * 2.0, x * 3.0), grad"
CG003 = "grad of 'weighted' returns 1 gradient but 'weighted' takes 2 inputs (x, w)"
ANSI = "\x1b["


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(SOURCE, encoding="utf-8")
    return tmp_path


def run_env(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Like run_cli, with the colour variables under the test's control."""
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full.update(PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-m", "cg_lint", *args], cwd=cwd, capture_output=True, env=full,
                          timeout=300)


def test_formats_are_listed():
    assert FORMATS == ("text", "concise", "json", "sarif", "github")


def test_text_shows_line_caret_fix_marker_and_summary(project):
    proc = run_cli("pkg/model.py", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines() == [
        f"pkg/model.py:8:5: CG001 [*] {CG001}",
        "    8 |     return x * 2.0, x * 3.0, grad",
        "      |     ^",
        "      = fix: Wrap the outputs in a tuple (--fix)",
        f"pkg/model.py:14:9: CG003 {CG003}",
        "   14 |         return dy * w",
        "      |         ^",
    ]
    assert proc.stderr.decode() == ("Found 2 problems in 1 file, 1 fixable with --fix "
                                    "(1 file with custom gradients checked)\n")


def test_concise_marks_fixable_findings(project):
    proc = run_cli("pkg/model.py", "--format", "concise", cwd=project)
    assert proc.stdout.decode().splitlines() == [
        f"pkg/model.py:8:5: CG001 [*] {CG001}",
        f"pkg/model.py:14:9: CG003 {CG003}",
    ]


def test_json_keeps_its_shape_and_carries_the_fix(project):
    proc = run_cli("pkg/model.py", "--format", "json", cwd=project)
    items = json.loads(proc.stdout)
    assert [(i["path"], i["line"], i["column"], i["code"], i["function"]) for i in items] == [
        ("pkg/model.py", 8, 5, "CG001", "split_scale"), ("pkg/model.py", 14, 9, "CG003", "weighted")]
    assert items[0]["fix"] == {"title": "Wrap the outputs in a tuple", "safe": True, "edits": [
        {"start_line": 8, "start_column": 12, "end_line": 8, "end_column": 34,
         "replacement": "(x * 2.0, x * 3.0), grad"}]}
    assert items[1]["fix"] is None
    assert proc.stderr == b""


def _validate(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)


def test_sarif_is_valid_against_the_official_schema(project):
    proc = run_cli("pkg/model.py", "--format", "sarif", cwd=project)
    assert proc.returncode == 1
    assert proc.stderr == b""
    log = json.loads(proc.stdout)
    _validate(log)
    (run,) = log["runs"]
    assert log["version"] == "2.1.0"
    driver = run["tool"]["driver"]
    assert driver["name"] == "cg-lint"
    assert [r["id"] for r in driver["rules"]] == ["CG001", "CG003"]
    assert driver["rules"][0]["name"] == "forward-return-not-pair"
    assert driver["rules"][0]["shortDescription"]["text"] == "Forward does not return (outputs, grad_fn)"
    assert driver["rules"][0]["fullDescription"]["text"].startswith("Checks that every `return`")
    assert "## Fix safety" in driver["rules"][0]["help"]["markdown"]
    first, second = run["results"]
    assert (first["ruleId"], first["ruleIndex"], first["level"], first["message"]["text"]) == ("CG001", 0, "error", CG001)
    location = first["locations"][0]
    assert location["physicalLocation"] == {"artifactLocation": {"uri": "pkg/model.py"},
                                            "region": {"startLine": 8, "startColumn": 5}}
    assert location["logicalLocations"] == [{"fullyQualifiedName": "split_scale", "kind": "function"}]
    (fix,) = first["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["replacements"] == [{
        "deletedRegion": {"startLine": 8, "startColumn": 12, "endLine": 8, "endColumn": 34},
        "insertedContent": {"text": "(x * 2.0, x * 3.0), grad"}}]
    assert second["ruleIndex"] == 1 and "fixes" not in second
    # the schema does reject what SARIF forbids: 0-based columns, unknown levels
    first["locations"][0]["physicalLocation"]["region"]["startColumn"] = 0
    with pytest.raises(jsonschema.ValidationError):
        _validate(log)
    first["locations"][0]["physicalLocation"]["region"]["startColumn"] = 5
    first["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        _validate(log)


def test_sarif_uris_are_relative_with_forward_slashes_even_for_absolute_arguments(project):
    (project / "pkg" / "my model.py").write_text(SOURCE, encoding="utf-8")
    proc = run_cli(str(project / "pkg"), "--format", "sarif", cwd=project)
    log = json.loads(proc.stdout)
    _validate(log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"pkg/model.py", "pkg/my%20model.py"}


def test_sarif_with_no_findings_is_valid_and_empty(tmp_path):
    (tmp_path / "clean.py").write_text("import tensorflow as tf\n", encoding="utf-8")
    proc = run_cli("clean.py", "--format", "sarif", cwd=tmp_path)
    assert proc.returncode == 0
    log = json.loads(proc.stdout)
    _validate(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


def test_sarif_for_runtime_findings_describes_them_from_the_registry_and_keeps_the_mode():
    findings = [
        Finding("mod.py", 3, 1, "CG103", "grad of 'f' returned a float64 gradient for a float32 input",
                function="f", mode="tf.function"),
        Finding("mod.py", 9, 1, "CG130", "could not find valid inputs for 'g'", function="g", mode="eager"),
    ]
    log = json.loads(format_findings(findings, "sarif", tool="runtime-check", levels={"CG130": "note"}))
    _validate(log)
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "runtime-check"
    assert run["tool"]["driver"]["rules"][0] == {
        "id": "CG103", "name": "gradient-not-tensor",
        "shortDescription": {"text": "a gradient is a Python number or a NumPy array, not a tensor"},
        "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["gradients"]}}
    assert [(r["level"], r["properties"]["mode"]) for r in run["results"]] == [("error", "tf.function"), ("note", "eager")]
    assert run["tool"]["driver"]["rules"][1]["defaultConfiguration"] == {"level": "note"}


def test_github_annotations(project):
    proc = run_cli("pkg/model.py", "--format", "github", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines() == [
        f"::error file=pkg/model.py,line=8,col=5,title=CG001::{CG001}",
        f"::error file=pkg/model.py,line=14,col=9,title=CG003::{CG003}",
    ]
    assert proc.stderr == b""


def test_github_escapes_properties_and_message(tmp_path):
    odd = tmp_path / "a,b:c%d.py"
    odd.write_text(SOURCE, encoding="utf-8")
    proc = run_cli(odd.name, "--format", "github", "--select", "CG003", cwd=tmp_path)
    assert proc.stdout.decode() == f"::error file=a%2Cb%3Ac%25d.py,line=14,col=9,title=CG003::{CG003}\n"
    assert escape_data("100%\r\nnext: a, b") == "100%25%0D%0Anext: a, b"
    assert escape_property("x:y,z%\n") == "x%3Ay%2Cz%25%0A"
    finding = Finding("m.py", 2, 3, "CG101", "line one\nline two: 50%", mode="tf.function", end_line=2, end_column=7)
    assert github_line(finding, "note") == (
        "::notice file=m.py,line=2,col=3,endLine=2,endColumn=7,title=CG101 (tf.function)::line one%0Aline two: 50%25")


def test_no_colour_when_piped_even_with_findings(project):
    proc = run_env("pkg/model.py", cwd=project)
    assert ANSI not in proc.stdout.decode()


def test_force_color_colours_and_no_color_wins(project):
    coloured = run_env("pkg/model.py", cwd=project, FORCE_COLOR="1").stdout.decode()
    assert "\x1b[1;31mCG001\x1b[0m" in coloured and "\x1b[36m[*]\x1b[0m" in coloured
    plain = run_env("pkg/model.py", cwd=project, FORCE_COLOR="1", NO_COLOR="1").stdout.decode()
    assert ANSI not in plain
    assert run_env("pkg/model.py", "--format", "json", cwd=project, FORCE_COLOR="1").stdout.decode().find(ANSI) == -1


def test_colour_on_a_real_terminal(project):
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(ROOT), TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "cg_lint", "pkg/model.py"], cwd=project, stdout=follower,
                            stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO once the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=300) == 1
    assert "\x1b[1;31mCG001\x1b[0m" in b"".join(chunks).decode()


def test_text_caret_follows_tabs_and_spans_a_known_range():
    finding = Finding("t.py", 1, 3, "CG001", "m", end_line=1, end_column=6,
                      fix=Fix("t", (Edit(1, 3, 1, 6, "x"),), safe=False))
    out = format_findings([finding], "text", {"t.py": ["\t\tabc = 1"]})
    lines = out.splitlines()
    assert lines[0] == "t.py:1:3: CG001 m"  # an unsafe fix is not marked without --unsafe-fixes
    assert lines[2] == "      | \t\t^^^"
    assert lines[3] == "      = unsafe fix: t (--unsafe-fixes)"
    assert format_findings([finding], "concise", unsafe_fixes=True) == "t.py:1:3: CG001 [*] m\n"


def test_unknown_format_is_one_line_error(project):
    proc = run_cli("pkg/model.py", "--format", "xml", cwd=project)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "invalid choice: 'xml'" in err and "sarif" in err
