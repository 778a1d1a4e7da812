"""Parts that need no TensorFlow: config schema, formats, targets, error classification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cg_lint.config import find_config, load_settings
from cg_lint.findings import Finding
from runtime_check import specs
from runtime_check.classify import classify, first_line
from runtime_check.issues import check_error
from runtime_check.report import format_findings, summary_table
from runtime_check.targets import TargetError, expand


def test_spec_schema_accepts_documented_example():
    config = specs.parse({
        "timeout": 30, "jit": True, "zero-upstream": True,
        "functions": {
            "pkg.mod:Cls.method": {"inputs": [{"shape": [4, 3], "dtype": "float32"}, {"value": 2}],
                                   "init": {"units": 4}},
            "pkg.mod:f": {"cases": [[{"shape": [3]}], [{"shape": [2, 3], "dtype": "float64"}]]},
        },
    }, "pyproject.toml")
    assert config.timeout == 30 and config.jit and config.zero_upstream and not config.numeric
    assert config.functions["pkg.mod:Cls.method"]["init"] == {"units": 4}
    assert len(config.functions["pkg.mod:f"]["cases"]) == 2


@pytest.mark.parametrize("section, message", [
    ({"timeout": -1}, "timeout must be a positive number"),
    ({"functions": {"f": {}}}, 'name functions as "package.module:qualname"'),
    ({"functions": {"m:f": {"input": []}}}, "unknown key 'tool.cg_lint.runtime.functions.\"m:f\".input'"),
    ({"functions": {"m:f": {"inputs": [{"shape": [3], "dtyp": "float32"}]}}},
     "unknown key 'tool.cg_lint.runtime.functions.\"m:f\".inputs[0].dtyp'"),
    ({"functions": {"m:f": {"inputs": [{"dtype": "float128"}]}}}, "dtype 'float128' is not one of"),
    ({"functions": {"m:f": {"inputs": [{"shape": [-1]}]}}}, "shape must be a list of non-negative integers"),
])
def test_spec_errors_are_one_line_and_name_the_key(section, message):
    with pytest.raises(specs.SpecError) as caught:
        specs.parse(section, "pyproject.toml")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_nearest_pyproject(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.cg_lint.runtime]\ntimeout = 5\n")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    (nested / "pyproject.toml").write_text("[project]\nname = 'a'\n")  # no [tool.cg_lint]: not ours
    found = find_config(nested)
    assert found == tmp_path / "pyproject.toml"
    assert specs.from_settings(load_settings(found)).timeout == 5


FINDINGS = [
    Finding("m.py", 3, 1, "CG101", "'f': gradient for input 'x' has shape () but the input has shape (3,)",
            function="f", mode="eager"),
    Finding("m.py", 9, 5, "CG130", "'g': no valid inputs found", function="g"),
]


def test_text_and_concise_formats():
    concise = format_findings(FINDINGS, "concise")
    assert concise.splitlines()[0] == ("m.py:3:1: CG101 'f': gradient for input 'x' has shape () "
                                       "but the input has shape (3,)")
    # text is the same first line, then the source (when the file exists) and the mode
    text = format_findings(FINDINGS, "text").splitlines()
    assert text[0] == concise.splitlines()[0]
    assert "      = mode: eager" in text


def test_json_format():
    data = json.loads(format_findings(FINDINGS, "json"))
    keys = ("path", "line", "column", "code", "message", "function", "mode")
    assert {k: data[0][k] for k in keys} == {"path": "m.py", "line": 3, "column": 1, "code": "CG101",
                                              "message": FINDINGS[0].message, "function": "f", "mode": "eager"}
    assert json.loads(format_findings([], "json")) == []


def test_unknown_format_rejected():
    with pytest.raises(ValueError):
        format_findings(FINDINGS, "xml")


def test_summary_table_aligns_columns():
    table = summary_table([("m.py:f", "ok", "x: float32[]"), ("m.py:long_name", "1 finding(s)", "-")])
    lines = table.splitlines()
    assert lines[0].split() == ["function", "result", "inputs", "used"]
    assert lines[2].index("ok") == lines[3].index("1 finding(s)")


def test_targets_folder_prefilter_and_package_names(tmp_path: Path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(x): ...\n")
    (package / "other.py").write_text("x = 1\n")
    for skipped in (".git", "build"):  # cg-lint's walk: its default excludes
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "h.py").write_text("custom_gradient\n")
    units = expand([str(tmp_path)])
    assert [(u.module, u.package) for u in units] == [("pkg.ops", True)]
    assert units[0].sys_path == str(tmp_path)


NAMESPACE_OPS = ("import tensorflow as tf\nfrom .. import helpers\n\n\n@tf.custom_gradient\ndef scaled(x):\n"
                 "    def grad(dy):\n        return dy * helpers.SCALE\n    return x * helpers.SCALE, grad\n")


def _namespace_project(root: Path) -> None:
    """``lib/`` without ``__init__.py`` holding ``helpers.py`` and a package ``ops/`` that imports ``..``."""
    (root / "lib" / "ops").mkdir(parents=True)
    (root / "lib" / "helpers.py").write_text("SCALE = 2.0\n")
    (root / "lib" / "ops" / "__init__.py").write_text("")
    (root / "lib" / "ops" / "scaled.py").write_text(NAMESPACE_OPS)
    (root / "flat").mkdir()
    (root / "flat" / "consts.py").write_text("K = 3.0\n")
    (root / "flat" / "tripled.py").write_text(NAMESPACE_OPS.replace("from .. import helpers", "from . import helpers")
                                              .replace("helpers", "consts").replace(".SCALE", ".K"))


def test_relative_imports_reaching_folders_without_init_name_them_as_namespace_packages(tmp_path: Path):
    _namespace_project(tmp_path)
    (tmp_path / "lib" / "plain.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(x): ...\n")
    units = {u.path.rsplit("/", 1)[-1]: u for u in expand([str(tmp_path)])}
    assert (units["scaled.py"].module, units["scaled.py"].package) == ("lib.ops.scaled", True)
    assert (units["tripled.py"].module, units["tripled.py"].package) == ("flat.tripled", True)
    assert units["scaled.py"].sys_path == units["tripled.py"].sys_path == str(tmp_path)
    # no relative import: still a file of its own, imported from its folder
    assert (units["plain.py"].module, units["plain.py"].package) == ("plain", False)


@pytest.mark.tf
def test_a_module_importing_from_a_namespace_package_imports_and_runs(tmp_path: Path, cli):
    _namespace_project(tmp_path)
    completed = cli("lib/ops/scaled.py", "flat/tripled.py", cwd=tmp_path)
    assert "CG122" not in completed.stdout, completed.stdout
    assert "lib/ops/scaled.py:scaled  ok" in completed.stdout
    assert "2 function(s) checked, 0 finding(s)" in completed.stdout


SIBLING = ("import tensorflow as tf\nfrom tools import {name}\n\n\n@tf.custom_gradient\ndef {fn}(x):\n"
           "    def grad(dy):\n        return {name}(dy)\n    return {name}(x), grad\n")


@pytest.mark.tf
def test_sibling_folders_each_import_their_own_top_level_module_in_one_worker(tmp_path: Path, cli):
    """``first/tools.py`` and ``second/tools.py`` define different names; each folder's module
    imports its own, as when run from its folder, though one worker imports both."""
    for folder, name, fn in (("first", "doubled", "twice"), ("second", "tripled", "thrice")):
        (tmp_path / folder).mkdir()
        factor = 2.0 if folder == "first" else 3.0
        (tmp_path / folder / "tools.py").write_text(f"def {name}(t):\n    return t * {factor}\n")
        (tmp_path / folder / f"ops_{folder}.py").write_text(SIBLING.format(name=name, fn=fn))
    completed = cli("-j", "1", "first/ops_first.py", "second/ops_second.py", cwd=tmp_path)
    assert "CG122" not in completed.stdout, completed.stdout
    assert "2 function(s) checked, 0 finding(s)" in completed.stdout


@pytest.mark.tf
def test_a_package_that_fails_to_import_fails_for_every_file_of_it_in_one_worker(tmp_path: Path, cli):
    """``pkg/__init__.py`` imports a module that needs a package not installed, after a sibling
    that imports: the first file's import fails and leaves ``pkg.conf``, ``pkg.core`` behind.
    The second file must fail the same way, as it does alone, not import a half-made package."""
    (tmp_path / "pkg" / "core" / "ops").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from . import conf\nfrom .core.hpo import tune\n")
    (tmp_path / "pkg" / "conf.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "core" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "core" / "ops" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "core" / "hpo.py").write_text("import not_installed_anywhere_here\n")
    for name in ("a", "b"):
        (tmp_path / "pkg" / "core" / "ops" / f"{name}.py").write_text(
            f"import tensorflow as tf\n\n\n@tf.custom_gradient\ndef f_{name}(x):\n"
            "    def grad(dy):\n        return dy\n    return x, grad\n")
    completed = cli("-j", "1", "pkg/core/ops/a.py", "pkg/core/ops/b.py", cwd=tmp_path)
    lines = [ln for ln in completed.stdout.splitlines() if "CG122" in ln]
    assert len(lines) == 2 and all("No module named 'not_installed_anywhere_here'" in ln for ln in lines), \
        completed.stdout


def test_targets_missing():
    with pytest.raises(TargetError, match="no such file, folder or module"):
        expand(["does/not/exist.py"])


@pytest.mark.parametrize("message, code", [
    ("Using a symbolic `tf.Tensor` as a Python `bool` is not allowed. You can ...", "CG009"),
    ("'SymbolicTensor' object has no attribute 'numpy'", "CG010"),
    ("float() argument must be a string or a real number, not 'SymbolicTensor'", "CG010"),
    ("The custom_gradient decorator currently supports keywords arguments only when eager execution is enabled.",
     "CG008"),
    ("@tf.custom_gradient grad_fn must accept keyword argument 'variables', since function uses variables: []",
     "CG004"),
    ("Recorded operation 'f' returned too few gradients. Expected 3 but received 4", "CG003"),
    ("cond: The second input must be a scalar, but it has shape [3]", "CG011"),
])
def test_classify_tensorflow_messages(message, code):
    found = classify(RuntimeError(message))
    assert found is not None and found[0] == code


def test_classify_python_flag_is_cg012():
    exc = TypeError("'SymbolicTensor' object cannot be interpreted as an integer")
    assert classify(exc, python_positionals=[3])[0] == "CG012"
    assert classify(exc)[0] == "CG009"


def test_classify_own_error_and_unrelated_error():
    assert classify(check_error("CG002", "'f': grad_fn(dy) cannot take 2"))[0] == "CG002"
    assert classify(ValueError("Dimensions must be equal, but are 3 and 4")) is None


def test_first_line_skips_autograph_stack():
    text = ("in user code:\n\n    File \"m.py\", line 3, in f  *\n        y = g(x)\n\n"
            "    TypeError: bad thing. More text")
    assert first_line(text) == "TypeError: bad thing."
