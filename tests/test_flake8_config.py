"""The flake8 plugin reads ``[tool.cg_lint]`` as the CLI and the server do, through real flake8.

flake8 runs in a scratch folder with its own result-cache folder (never the user's), so the tests
hold with a warm user cache and in the background.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lint_helpers import ROOT

pytest.importorskip("flake8")

ARITY = (ROOT / "examples" / "arity.py").read_text(encoding="utf-8")
CG001 = "arity.py:31:5: CG001"
CG002 = "arity.py:39:9: CG002"
CG003 = "arity.py:16:9: CG003"
BRANCHY = """\
import tensorflow as tf


@tf.custom_gradient
def clip_grad(x):
    def grad(dy):
        if tf.reduce_max(tf.abs(dy)) > 1.0:
            dy = tf.clip_by_norm(dy, 1.0)
        return dy
    return tf.identity(x), grad
"""
WRAPPED = "from mylib import surrogate\n\n\n@surrogate\ndef f(x, y):\n    return x, lambda d: d\n"


def flake8(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), CG_LINT_CACHE_DIR=str(cwd / ".cg-cache"))
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, env=env, timeout=300)


def codes(proc: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        where, message = line.split(": ", 1)
        out.append(f"{where}: {message.split(' ', 1)[0]}")
    return out


def project(tmp_path: Path, table: str, files: dict[str, str]) -> Path:
    """A project folder with ``[tool.cg_lint]`` holding ``table``; flake8 runs from its parent."""
    root = tmp_path / "proj"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text(f"[tool.cg_lint]\n{table}\n")
    return root


def test_select_ignore_and_per_file_ignores_come_from_the_files_pyproject(tmp_path):
    project(tmp_path, 'ignore = ["CG002"]\nper-file-ignores = { "sub/*" = ["CG001"] }',
            {"arity.py": ARITY, "sub/arity.py": ARITY})
    # run from above the project: the configuration is found from each file's folder, as the CLI does
    proc = flake8("--select", "CG", "proj", cwd=tmp_path)
    assert sorted(codes(proc)) == [f"proj/{CG003}", f"proj/{CG001}", f"proj/sub/{CG003}"]
    (tmp_path / "proj" / "pyproject.toml").write_text('[tool.cg_lint]\nselect = ["CG001"]\n')
    assert codes(flake8("--select", "CG", "proj/arity.py", cwd=tmp_path)) == [f"proj/{CG001}"]


def test_flake8_options_apply_on_top(tmp_path):
    project(tmp_path, 'ignore = ["CG002"]', {"arity.py": ARITY})
    # flake8's own selection filters what the configuration lets through ...
    assert codes(flake8("--select", "CG", "--extend-ignore", "CG003", "proj", cwd=tmp_path)) == [f"proj/{CG001}"]
    assert codes(flake8("--select", "CG001", "proj", cwd=tmp_path)) == [f"proj/{CG001}"]
    per_file = flake8("--select", "CG", "--per-file-ignores", "proj/arity.py:CG001", "proj", cwd=tmp_path)
    assert codes(per_file) == [f"proj/{CG003}"]
    # ... and cannot bring back what [tool.cg_lint] ignores (the CLI's rule: ignore wins a tie)
    assert codes(flake8("--select", "CG002", "proj", cwd=tmp_path)) == []
    # --cg-isolated: [tool.cg_lint] is not read at all
    assert len(codes(flake8("--select", "CG", "--cg-isolated", "proj", cwd=tmp_path))) == 3


def test_stdin_uses_the_display_names_folder(tmp_path):
    root = project(tmp_path, 'ignore = ["CG001", "CG002"]', {})
    proc = flake8("--select", "CG", "--stdin-display-name", "arity.py", "-", cwd=root, stdin=ARITY)
    assert codes(proc) == [CG003]
    proc = flake8("--select", "CG", "--stdin-display-name", "proj/arity.py", "-", cwd=tmp_path, stdin=ARITY)
    assert codes(proc) == [f"proj/{CG003}"]


def test_decorators_from_the_config_and_from_flake8_add_up(tmp_path):
    project(tmp_path, 'decorators = ["mylib.surrogate"]',
            {"w.py": WRAPPED, "v.py": WRAPPED.replace("surrogate", "other")})
    assert codes(flake8("--select", "CG", "proj/w.py", "proj/v.py", cwd=tmp_path)) == ["proj/w.py:6:25: CG003"]
    both = flake8("--select", "CG", "--cg-decorators", "mylib.other", "proj/w.py", "proj/v.py", cwd=tmp_path)
    assert sorted(codes(both)) == ["proj/v.py:6:25: CG003", "proj/w.py:6:25: CG003"]


def test_max_file_size_and_excludes(tmp_path):
    project(tmp_path, 'max-file-size = 200\nextend-exclude = ["generated"]',
            {"arity.py": ARITY, "generated/arity.py": ARITY})
    proc = flake8("--select", "CG", "proj", cwd=tmp_path)
    size = len(ARITY.encode()) / (1024 * 1024)
    limit = 200 / (1024 * 1024)
    assert proc.stdout.splitlines() == [
        f"proj/arity.py:1:1: CG999 cg-lint file too large to check ({size:.1f} MB > {limit:.1f} MB limit)"]


def test_trace_context_setting(tmp_path):
    root = project(tmp_path, 'trace-context = "always"', {"scripts/clip.py": BRANCHY})
    assert [c.split(": ")[1] for c in codes(flake8("--select", "CG", "proj", cwd=tmp_path))] == ["CG009"]
    (root / "pyproject.toml").write_text('[tool.cg_lint]\ntrace-context = "never"\n')
    assert codes(flake8("--select", "CG", "proj", cwd=tmp_path)) == []


def test_a_changed_configuration_is_never_answered_from_the_result_cache(tmp_path):
    root = project(tmp_path, "", {"arity.py": ARITY})
    args = ("--select", "CG", "proj/arity.py")
    assert len(codes(flake8(*args, cwd=tmp_path))) == 3
    for table, expected in [('ignore = ["CG003"]', 2), ('select = ["CG001"]', 1), ("", 3),
                            ('per-file-ignores = { "arity.py" = ["CG0"] }', 0), ('trace-context = "never"', 3)]:
        (root / "pyproject.toml").write_text(f"[tool.cg_lint]\n{table}\n")
        assert len(codes(flake8(*args, cwd=tmp_path))) == expected, table
    assert any((tmp_path / ".cg-cache").rglob("*")), "the runs above used the result cache"


def test_a_broken_configuration_is_one_line_on_the_files_it_concerns(tmp_path):
    project(tmp_path, "select = 5", {"arity.py": ARITY, "plain.py": "x = 1\n"})
    proc = flake8("--select", "CG", "proj", cwd=tmp_path)
    assert "Traceback" not in proc.stderr
    assert proc.stdout.splitlines() == [
        f"proj/arity.py:1:1: CG999 cg-lint configuration error: {tmp_path / 'proj' / 'pyproject.toml'}: "
        "'tool.cg_lint.select' must be a list of strings"]
