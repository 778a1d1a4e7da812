"""Which files a run visits: the walk's order, symlinks, virtualenvs and excludes, on a real tree."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from cg_lint.config import Excluder, Settings, iter_files
from cg_lint.findings import FileError


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


def _deep_folder(root: Path, levels: int, name_length: int = 200) -> str:
    """Nested folders whose full path exceeds PATH_MAX (4,096 on Linux), made relative to an open
    folder, as a tool with a long checkout path meets them; returns the first level's name."""
    fd = os.open(root, os.O_RDONLY)
    first = "d" * name_length
    try:
        for level in range(levels):
            name = f"{level:03d}" + "d" * (name_length - 3) if level else first
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("lost.py", os.O_WRONLY | os.O_CREAT, dir_fd=fd), "w") as fh:
            fh.write("x = 1\n")
    finally:
        os.close(fd)
    return first


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PATH_MAX of Linux")
def test_a_folder_that_cannot_be_listed_is_reported_and_the_walk_goes_on(tmp_path):
    _tree(tmp_path, ["a.py", "z.py"])
    first = _deep_folder(tmp_path, levels=24)
    try:
        found = list(iter_files([str(tmp_path)], Settings(root=str(tmp_path))))
        paths = [os.path.relpath(p, tmp_path) for p in found if isinstance(p, str)]
        errors = [e for e in found if isinstance(e, FileError)]
        assert paths == ["a.py", "z.py"]
        (error,) = errors
        assert error.message == "cannot read folder: File name too long"
        assert error.path.startswith(str(tmp_path / first)) and len(error.path) > 4096
    finally:
        shutil.rmtree(tmp_path / first)  # by file descriptors: the path is too long for a name


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any folder")
def test_a_folder_without_read_permission_is_reported(tmp_path):
    _tree(tmp_path, ["a.py", "locked/b.py"])
    (tmp_path / "locked").chmod(0)
    try:
        found = list(iter_files([str(tmp_path)], Settings(root=str(tmp_path))))
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert [p for p in found if isinstance(p, str)] == [str(tmp_path / "a.py")]
    assert [(e.path, e.message) for e in found if isinstance(e, FileError)] == [
        (str(tmp_path / "locked"), "cannot read folder: Permission denied")]
