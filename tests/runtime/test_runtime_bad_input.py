"""Special files and bad limits or configuration: one line each, never a hang or a traceback.

None of these runs reaches a worker, so none needs TensorFlow; each has the subprocess timeout
as its bound.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_are_skipped_with_one_line_each(tmp_path: Path, cli):
    os.mkfifo(tmp_path / "named.py")
    (tmp_path / "pkg").mkdir()
    os.mkfifo(tmp_path / "pkg" / "found.py")
    # nobody ever writes to these FIFOs: opening one for reading would block the run for good
    completed = cli("named.py", "pkg", cwd=tmp_path, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.splitlines() == [
        "named.py: skipped: a FIFO, not a regular file",
        f"{os.path.join('pkg', 'found.py')}: skipped: a FIFO, not a regular file",
    ]
    assert completed.stdout == "no custom gradients found (no Python file mentions custom_gradient)\n"


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--timeout", "1e309"],
            "argument --timeout: must be a positive, finite number of seconds, not '1e309'",
        ),
        (
            ["--timeout", "nan"],
            "argument --timeout: must be a positive, finite number of seconds, not 'nan'",
        ),
        (
            ["--timeout", "0"],
            "argument --timeout: must be a positive, finite number of seconds, not '0'",
        ),
        (["-j", "-1"], "argument -j/--jobs: '-1' is not a number of jobs (a positive integer, 0 or auto)"),
        (
            ["-j", "many"],
            "argument -j/--jobs: 'many' is not a number of jobs (a positive integer, 0 or auto)",
        ),
        (
            ["--max-memory", "12Q"],
            "argument --max-memory: invalid size '12Q' (expected e.g. 512M or 2G)",
        ),
    ],
)
def test_bad_limits_are_one_line(argv: list[str], message: str, tmp_path: Path, cli, one_line_error):
    (tmp_path / "m.py").write_text("x = 1\n")
    assert one_line_error(cli(*argv, "m.py", cwd=tmp_path)) == f"runtime-check: error: {message}"


@pytest.mark.parametrize("jobs", ["auto", "0", "1"])
def test_jobs_auto_is_accepted(tmp_path: Path, cli, jobs: str):
    """The same ``-j`` as cg-lint's: ``auto`` and ``0`` both mean one worker per core."""
    (tmp_path / "plain.py").write_text("def f(x):\n    return x\n")
    completed = cli("-j", jobs, "--max-memory", "2G", "--format", "json", ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "content, message",
    [
        (
            "[tool.cg_lint.runtime]\ntimeout = 1e309\n",
            "tool.cg_lint.runtime.timeout must be a positive number of seconds, and finite",
        ),
        (
            "[tool.cg_lint.runtime]\ntimeout = nan\n",
            "tool.cg_lint.runtime.timeout must be a positive number of seconds, and finite",
        ),
        ("[tool.cg_lint]\nruntime = 3\n", "must be a table"),
    ],
)
def test_bad_runtime_table_names_the_file(content: str, message: str, tmp_path: Path, cli, one_line_error):
    (tmp_path / "pyproject.toml").write_text(content)
    (tmp_path / "m.py").write_text("x = 1\n")
    line = one_line_error(cli("m.py", cwd=tmp_path))
    assert line.startswith(str(tmp_path / "pyproject.toml")) and message in line, line


@pytest.mark.parametrize(
    "content, message",
    [
        ("tool = 5\n", "'tool' must be a table"),
        ("[tool.cg_lint\n", "invalid TOML"),
    ],
)
def test_bad_config_file_names_the_file(content: str, message: str, tmp_path: Path, cli, one_line_error):
    (tmp_path / "settings.toml").write_text(content)
    (tmp_path / "m.py").write_text("x = 1\n")
    line = one_line_error(cli("--config", "settings.toml", "m.py", cwd=tmp_path))
    assert line.startswith("settings.toml: ") and message in line, line
