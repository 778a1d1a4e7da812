"""Bad input gets one clear line and exit 2; none of these need TensorFlow."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_missing_path(tmp_path: Path, cli, one_line_error):
    line = one_line_error(cli("no/such/file.py", cwd=tmp_path))
    assert line == "no/such/file.py: error: no such file, folder or module"


def test_unknown_module_name(tmp_path: Path, cli, one_line_error):
    line = one_line_error(cli("surely_not_a_module_xyz", cwd=tmp_path))
    assert line == "surely_not_a_module_xyz: error: no such file, folder or module"


def test_unknown_format(tmp_path: Path, cli, one_line_error):
    line = one_line_error(cli("--format", "xml", "x.py", cwd=tmp_path))
    assert line.startswith("runtime-check: error: argument --format/--output-format: invalid choice: 'xml'")


def test_not_a_python_file(tmp_path: Path, cli, one_line_error):
    (tmp_path / "notes.txt").write_text("hello")
    assert one_line_error(cli("notes.txt", cwd=tmp_path)) == "notes.txt: error: not a Python file"


def test_bad_config_key_is_named(tmp_path: Path, cli, one_line_error):
    (tmp_path / "pyproject.toml").write_text("[tool.cg_lint.runtime]\ntimout = 3\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    line = one_line_error(cli("m.py", cwd=tmp_path))
    assert "unknown key 'tool.cg_lint.runtime.timout'" in line


def test_plot_without_matplotlib(tmp_path: Path, cli, make_env, one_line_error):
    # a matplotlib that cannot be imported stands in for a missing one
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    env = make_env()
    env["PYTHONPATH"] = f"{tmp_path / 'shadow'}:{env['PYTHONPATH']}"
    line = one_line_error(cli("--plot", "out", "m.py", cwd=tmp_path, env=env))
    assert line == "runtime-check: error: --plot needs matplotlib (the 'plot' extra): pip install matplotlib"


def test_folder_without_custom_gradients_is_clean(tmp_path: Path, cli):
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    completed = cli("--format", "json", ".", cwd=tmp_path)
    assert completed.returncode == 0
    assert completed.stdout.strip() == "[]"


def test_plugin_import_does_not_import_tensorflow(make_env):
    import subprocess
    import sys

    code = ("import sys, runtime_check.pytest_plugin, runtime_check.cli, runtime_check.report; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    completed = subprocess.run([sys.executable, "-c", code], env=make_env(), capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version(argv, tmp_path: Path, cli):
    completed = cli(*argv, cwd=tmp_path)
    assert completed.returncode == 0
    assert "runtime-check" in completed.stdout
