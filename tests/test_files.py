"""Which files a run visits: the walk's order, symlinks, virtualenvs and excludes, on a real tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cg_lint.config import Excluder, Settings
from cg_lint.files import iter_files


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _walk(root: Path, settings: Settings | None = None) -> list[str]:
    return [os.path.relpath(p, root) for p in iter_files([str(root)], settings or Settings(root=str(root)))]


def test_files_come_before_subfolders_both_sorted(tmp_path):
    _tree(tmp_path, ["b.py", "a.pyi", "z/c.py", "m/d.py", "m/a/e.py", "notes.txt", "m/f.pyc"])
    assert _walk(tmp_path) == ["a.pyi", "b.py", "m/d.py", "m/a/e.py", "z/c.py"]


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="symlinks")
def test_symlinked_folders_are_not_entered_but_symlinked_files_are_read(tmp_path):
    _tree(tmp_path, ["real/a.py"])
    os.symlink(tmp_path / "real", tmp_path / "alias")
    os.symlink(tmp_path / "real" / "a.py", tmp_path / "link.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")  # reported as unreadable later
    assert _walk(tmp_path) == ["dangling.py", "link.py", "real/a.py"]


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="symlinks")
def test_a_folder_with_pyvenv_cfg_is_a_virtualenv_unless_the_file_dangles(tmp_path):
    _tree(tmp_path, ["env/pyvenv.cfg", "env/lib/a.py", "odd/b.py", "pkg/c.py"])
    os.symlink(tmp_path / "nowhere.cfg", tmp_path / "odd" / "pyvenv.cfg")
    assert _walk(tmp_path) == ["odd/b.py", "pkg/c.py"]
    # a virtualenv named on the command line is walked (only its subfolders are checked)
    assert _walk(tmp_path / "env") == ["lib/a.py"]


def test_a_top_level_folder_named_explicitly_is_linted_even_if_its_name_is_excluded(tmp_path):
    _tree(tmp_path, ["build/gen.py", "build/dist/x.py", "src/build/y.py", "src/z.py"])
    settings = Settings(root=str(tmp_path))
    assert _walk(tmp_path, settings) == ["src/z.py"]
    assert _walk(tmp_path / "build", settings) == ["gen.py"]  # its own "dist" is excluded again


def test_patterns_with_a_slash_match_the_path_from_the_root_and_names_match_any_component(tmp_path):
    excluder = Excluder(("src/generated", "**/fixtures", "*_pb2.py"), str(tmp_path))
    assert excluder.excluded(str(tmp_path / "src/generated/a.py"))
    assert not excluder.excluded(str(tmp_path / "lib/src/generated/a.py"))
    assert excluder.excluded(str(tmp_path / "deep/down/fixtures/a.py"))
    assert excluder.excluded(str(tmp_path / "pkg/model_pb2.py"))
    assert not excluder.excluded(str(tmp_path / "pkg/model_pb2_test.py"))
    assert excluder.entry_excluded(str(tmp_path / "src/generated"), "generated")
    assert not excluder.entry_excluded(str(tmp_path / "lib/generated"), "generated")
