"""The project keeps its own house: one version, a license, a changelog and a tag per release, and
its own linters (ruff and mypy, configured in pyproject.toml) pass on its code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cg_lint
import runtime_check

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = cg_lint.__version__


def test_the_version_is_written_once() -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "cg_lint.__version__"}
    assert runtime_check.__version__ is cg_lint.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    written = [p for p in (*ROOT.glob("cg_lint/**/*.py"), *ROOT.glob("runtime_check/**/*.py"))
               if re.search(r"^__version__ = ", p.read_text(encoding="utf-8"), re.M)]
    assert written == [ROOT / "cg_lint" / "__init__.py"]


def test_the_changelog_has_the_release() -> None:
    # the pre-commit snippets name a commit, not the tag: tests/test_precommit_snippets.py
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(VERSION)} - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="not a git checkout")
def test_the_release_tag_exists() -> None:
    tags = subprocess.run(["git", "tag", "--list"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    if not tags.strip():
        pytest.skip("a clone without tags (CI fetches history without them)")
    kind = subprocess.run(["git", "cat-file", "-t", f"v{VERSION}"], cwd=ROOT, capture_output=True, text=True)
    assert kind.stdout.strip() == "tag", f"v{VERSION} is not an annotated tag"


def test_license_is_the_one_pyproject_declares() -> None:
    assert PYPROJECT["project"]["license"] == {"text": "Apache-2.0"}
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the full text, not a pointer to it


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"^\$ (python -m pip install -e .*pytest.*)$", readme, re.M)
    assert shown is not None
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").replace(" --quiet", "")
    assert shown.group(1) in ci


def test_the_pre_commit_config_is_valid() -> None:
    pre_commit = shutil.which("pre-commit") or pytest.skip("pre-commit is not installed")
    proc = subprocess.run([pre_commit, "validate-config", ".pre-commit-config.yaml"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_passes() -> None:
    pytest.importorskip("ruff", reason="ruff is not installed (pip install -e '.[test]')")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_passes() -> None:
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
