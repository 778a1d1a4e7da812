"""The on-disk result cache: real CLI and flake8 runs in fresh processes, real cache folders.

A hit is observed from outside: the run's ``-X importtime`` shows that libcst was never imported
(nothing else in a hit needs it), and its output is byte-identical to the cold run's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cg_lint.result_cache import SCHEMA
from lint_helpers import ROOT
from test_cli import BAD, GOOD

ARITY = (ROOT / "examples" / "arity.py").read_text(encoding="utf-8")
ENTRIES = f"results-v{SCHEMA}"


def run(
    *args: str,
    cwd: Path,
    cache: Path | None,
    stdin: str | None = None,
    module: str = "cg_lint",
    importtime: bool = False,
    pythonpath: Path = ROOT,
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(pythonpath), NO_COLOR="1")
    env.pop("CG_LINT_CACHE_DIR", None)
    if cache is not None:
        env["CG_LINT_CACHE_DIR"] = str(cache)
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", module, *args]
    return subprocess.run(
        command, cwd=cwd, input=stdin, capture_output=True, text=True, env=env, timeout=300
    )


def entries(cache: Path) -> list[Path]:
    folder = cache / ENTRIES
    return sorted(folder.iterdir()) if folder.is_dir() else []


def imported_libcst(proc: subprocess.CompletedProcess) -> bool:
    return any(line.rstrip().endswith((" libcst", "| libcst")) for line in proc.stderr.splitlines())


def output(proc: subprocess.CompletedProcess) -> tuple[int, str, list[str]]:
    """What a user sees, without -X importtime's lines."""
    return (
        proc.returncode,
        proc.stdout,
        [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")],
    )


def test_second_cli_run_is_a_hit_with_the_same_output(tmp_path):
    (tmp_path / "arity.py").write_text(ARITY)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "plain.py").write_text("x = 1\n")
    cache = tmp_path / "cache"
    for fmt in ("text", "json"):
        cold = run(".", "--format", fmt, cwd=tmp_path, cache=cache, importtime=True)
        warm = run(".", "--format", fmt, cwd=tmp_path, cache=cache, importtime=True)
        assert output(cold)[0] == 1 and output(cold) == output(warm)
        assert not imported_libcst(warm)
    # the two candidate files have one entry each (a file without the marker is never looked up)
    assert len(entries(cache)) == 2
    fixes = [f["fix"] for f in json.loads(warm.stdout) if f["fix"]]
    assert fixes == [
        {"title": "Wrap the outputs in a tuple", "safe": True, "edits": fixes[0]["edits"]}
    ]
    # the fix from a cached result still applies
    fixed = run(".", "--fix", cwd=tmp_path, cache=cache)
    assert "Fixed 1 problem, 2 remaining" in fixed.stderr
    assert "return (mean, spread), grad" in (tmp_path / "arity.py").read_text()


def test_an_edit_or_other_settings_miss(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(BAD)
    cache = tmp_path / "cache"
    first = run("bad.py", "--format", "concise", cwd=tmp_path, cache=cache)
    assert "CG003" in first.stdout
    # other settings: their own entry, their own result
    ignored = run("bad.py", "--ignore", "CG003", cwd=tmp_path, cache=cache, importtime=True)
    assert (ignored.returncode, ignored.stdout) == (0, "") and imported_libcst(ignored)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cg_lint]\nper-file-ignores = { "bad.py" = ["CG003"] }\n'
    )
    per_file = run("bad.py", cwd=tmp_path, cache=cache, importtime=True)
    assert (per_file.returncode, per_file.stdout) == (0, "") and imported_libcst(per_file)
    (tmp_path / "pyproject.toml").unlink()
    # an edit: a miss, and the new position
    path.write_text("\n" + BAD)
    moved = run("bad.py", "--format", "concise", cwd=tmp_path, cache=cache, importtime=True)
    assert imported_libcst(moved) and moved.stdout.startswith("bad.py:8:9: CG003")
    assert len(entries(cache)) == 4


def test_an_edited_cg_lint_never_reads_the_old_results(tmp_path):
    # a copy of the package, so that editing one of its modules touches nothing else
    shutil.copytree(
        ROOT / "cg_lint", tmp_path / "pkg" / "cg_lint", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "bad.py").write_text(BAD)
    cache = tmp_path / "cache"
    pkg = tmp_path / "pkg"
    run("bad.py", cwd=tmp_path, cache=cache, pythonpath=pkg)
    warm = run("bad.py", cwd=tmp_path, cache=cache, pythonpath=pkg, importtime=True)
    assert not imported_libcst(warm)
    rule = pkg / "cg_lint" / "rules" / "arity" / "gradient_count_mismatch.py"
    rule.write_text(rule.read_text() + "\n# edited\n")
    edited = run("bad.py", cwd=tmp_path, cache=cache, pythonpath=pkg, importtime=True)
    assert imported_libcst(edited) and output(edited) == output(warm)
    assert len(entries(cache)) == 2


def test_a_corrupt_entry_is_a_miss_and_is_replaced(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    cache = tmp_path / "cache"
    cold = run("bad.py", cwd=tmp_path, cache=cache)
    [entry] = entries(cache)
    for garbage in (
        b"",
        b"{not json",
        b'{"schema": %d, "findings": [{"nope": 1}]}' % SCHEMA,
        b"\xff\xfe",
        b"[]",
    ):
        entry.write_bytes(garbage)
        again = run("bad.py", cwd=tmp_path, cache=cache, importtime=True)
        assert imported_libcst(again) and output(again) == output(cold)
        assert json.loads(entry.read_bytes().partition(b"\n")[2])["schema"] == SCHEMA  # rewritten whole
    assert [p.name for p in entries(cache)] == [entry.name]  # no temporary file left behind


def test_an_unusable_cache_folder_costs_only_the_cache(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    reference = run("bad.py", "--no-cache", cwd=tmp_path, cache=None)
    # the cache folder would be below a regular file: every write fails (NotADirectoryError)
    for _ in range(2):
        proc = run("bad.py", cwd=tmp_path, cache=blocker / "cache")
        assert output(proc) == output(reference)
    assert blocker.read_text() == "not a folder\n"


def test_no_cache_cache_dir_and_the_setting(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    default = tmp_path / "default"
    run("bad.py", "--no-cache", cwd=tmp_path, cache=default)
    assert not default.exists()
    run("bad.py", "--cache-dir", "flag", cwd=tmp_path, cache=default)
    assert len(entries(tmp_path / "flag")) == 1 and not default.exists()
    assert (tmp_path / "flag" / ".gitignore").read_text().splitlines()[-1] == "*"
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\ncache-dir = ".cg_lint_cache"\n')
    run("bad.py", cwd=tmp_path, cache=default)
    # the repository's folder holds the entries; the user's folder only the secret that signs them
    assert len(entries(tmp_path / ".cg_lint_cache")) == 1
    assert sorted(p.name for p in default.iterdir()) == ["secret"]
    (tmp_path / "pyproject.toml").write_text("[tool.cg_lint]\ncache-dir = 3\n")
    bad = run("bad.py", cwd=tmp_path, cache=default)
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith("'tool.cg_lint.cache-dir' must be a string (a folder)")


def test_stdin_is_cached_under_its_display_name(tmp_path):
    cache = tmp_path / "cache"
    cold = run("-", "--stdin-filename", "src/bad.py", cwd=tmp_path, cache=cache, stdin=BAD)
    warm = run(
        "-", "--stdin-filename", "src/bad.py", cwd=tmp_path, cache=cache, stdin=BAD, importtime=True
    )
    assert "src/bad.py:7:9: CG003" in cold.stdout and output(cold) == output(warm)
    assert not imported_libcst(warm)


def test_unparsable_files_are_cached_with_their_error(tmp_path):
    (tmp_path / "broken.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(:\n")
    cache = tmp_path / "cache"
    cold = run("broken.py", cwd=tmp_path, cache=cache)
    warm = run("broken.py", cwd=tmp_path, cache=cache, importtime=True)
    assert cold.returncode == 2 and "broken.py:3" in cold.stderr and output(cold) == output(warm)


# --- flake8 ---------------------------------------------------------------------------------------


def test_flake8_second_run_is_a_hit(tmp_path):
    pytest.importorskip("flake8")
    (tmp_path / "arity.py").write_text(ARITY)
    cache = tmp_path / "cache"
    args = ("--isolated", "--select", "CG", "arity.py")
    cold = run(*args, cwd=tmp_path, cache=cache, module="flake8", importtime=True)
    warm = run(*args, cwd=tmp_path, cache=cache, module="flake8", importtime=True)
    assert imported_libcst(cold) and not imported_libcst(warm)
    assert output(cold) == output(warm) and cold.stdout.count("arity.py:") == 3
    # the CLI's entries are not flake8's (no # noqa applied there, 0-based columns here); flake8
    # keeps one for the file, one for its reduced text and one for the project's decision on its
    # CG003 findings (cg_lint/project/snapshot.py)
    assert len(entries(cache)) == 3
    run("arity.py", cwd=tmp_path, cache=cache)
    assert len(entries(cache)) == 4
    # --cg-no-cache: neither read nor written
    shutil.rmtree(cache)
    off = run("--cg-no-cache", *args, cwd=tmp_path, cache=cache, module="flake8", importtime=True)
    assert imported_libcst(off) and output(off) == output(cold) and not cache.exists()
    run("--cg-cache-dir", str(tmp_path / "mine"), *args, cwd=tmp_path, cache=cache, module="flake8")
    assert len(entries(tmp_path / "mine")) == 3


def test_flake8_edit_outside_custom_gradients_reuses_the_result(tmp_path):
    """An edit the reduction blanks (here: a statement added above every definition; a comment
    there is not blanked, so it is not such an edit) is answered from
    the entry of the previous text, positions moved, without libcst; one inside a definition is
    linted again."""
    pytest.importorskip("flake8")
    path = tmp_path / "arity.py"
    path.write_text(ARITY)
    cache = tmp_path / "cache"
    args = ("--isolated", "--select", "CG", "arity.py")
    first = run(*args, cwd=tmp_path, cache=cache, module="flake8")
    lines = ARITY.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(("def ", "@", "class ")))
    path.write_text("".join([*lines[:at], "EDITED = 1\n", "\n", *lines[at:]]))
    edited = run(*args, cwd=tmp_path, cache=cache, module="flake8", importtime=True)
    fresh = run("--cg-no-cache", *args, cwd=tmp_path, cache=cache, module="flake8")
    assert not imported_libcst(edited)
    assert output(edited) == output(fresh) != output(first) and fresh.stdout.count("arity.py:") == 3
    path.write_text(ARITY.replace("-1.0, 1.0)", "-1.5, 1.5)", 1))
    inside = run(*args, cwd=tmp_path, cache=cache, module="flake8", importtime=True)
    assert imported_libcst(inside)


# --- in-process: bounds and what is never kept ------------------------------------------------


def test_prune_keeps_the_most_recently_used(tmp_path):
    from cg_lint.result_cache import PRUNE_TO, prune

    folder = tmp_path / "entries"
    folder.mkdir()
    for i in range(50):
        (folder / f"{i:040x}").write_text("{}")
        os.utime(folder / f"{i:040x}", ns=(i * 10**9, i * 10**9))
    assert prune(folder, max_entries=60) == 0
    assert prune(folder, max_entries=40) == 50 - int(40 * PRUNE_TO)
    assert sorted(p.name for p in folder.iterdir()) == [
        f"{i:040x}" for i in range(50 - int(40 * PRUNE_TO), 50)
    ]


def test_internal_errors_are_never_kept(tmp_path):
    from cg_lint.findings import FileError, FileResult
    from cg_lint.result_cache import ResultCache

    cache = ResultCache(tmp_path, "settings", secret=b"s" * 32)
    key = cache.key("a.py", b"data")
    cache.put(
        key,
        FileResult("a.py", error=FileError("a.py", "internal error: boom (please report this)")),
    )
    assert cache.get(key) is None and entries(tmp_path) == []
    cache.put(
        key,
        FileResult(
            "a.py", error=FileError("a.py", "cannot parse: invalid syntax", 3, 7), parsed=False
        ),
    )
    hit = cache.get(key)
    assert hit is not None and (hit.error.message, hit.error.line, hit.error.column) == (
        "cannot parse: invalid syntax",
        3,
        7,
    )


def test_the_hook_command_uses_the_cache(tmp_path):
    """pre-commit runs `cg-lint --force-exclude` on the staged files: the same cache."""
    (tmp_path / "bad.py").write_text(BAD)
    cache = tmp_path / "cache"
    hook = ("--force-exclude", "bad.py")
    cold = run(*hook, cwd=tmp_path, cache=cache)
    warm = run(*hook, cwd=tmp_path, cache=cache, importtime=True)
    assert cold.returncode == 1 and output(cold) == output(warm) and not imported_libcst(warm)
    assert (ROOT / ".pre-commit-hooks.yaml").read_text().count("entry: cg-lint ") == 2


@pytest.mark.slow
def test_real_pre_commit_hook_fills_and_reads_the_cache(tmp_path):
    """The hook as users install it (a `.pre-commit-config.yaml` naming this repository at its
    HEAD commit, one pre-commit home kept between runs) writes entries, and a second run reports
    the same from them. `try-repo` would not do: it installs the hook into a new temporary store
    on every run, so cg-lint itself is a different installation each time (a different key)."""
    pytest.importorskip("pre_commit")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and this repository's checkout")
    from test_precommit import user_repo

    repo = user_repo(tmp_path, {"bad.py": BAD, "good.py": GOOD})
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n      - id: cg-lint\n")
    cache = tmp_path / "hook-cache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the hook's own install
    env.update(CG_LINT_CACHE_DIR=str(cache), PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))

    def run_hook() -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "pre_commit", "run", "cg-lint", "--all-files", "--verbose"]
        return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)

    first = run_hook()
    assert len(entries(cache)) == 2, first.stdout + first.stderr  # both files hold custom gradients
    old = 10**18  # 2001: a read sets an entry's time to now, a write replaces the file (inode)
    for p in entries(cache):
        os.utime(p, ns=(old, old))
    inodes = {p.name: p.stat().st_ino for p in entries(cache)}
    second = run_hook()
    for proc in (first, second):
        assert proc.returncode == 1 and "bad.py:7:9: CG003" in proc.stdout + proc.stderr
    # the second run read both entries and wrote none
    assert {p.name: p.stat().st_ino for p in entries(cache)} == inodes
    assert all(p.stat().st_mtime_ns > old for p in entries(cache))


def test_a_result_that_read_another_module_is_never_kept(tmp_path):
    # `from mypkg import compat as tf`: whether tf.custom_gradient is TensorFlow's is read from
    # mypkg/compat.py, which the file's own bytes do not key; an edit there must show at once
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    compat = tmp_path / "mypkg" / "compat.py"
    compat.write_text("from tensorflow.compat.v2 import *\n")
    (tmp_path / "mypkg" / "layer.py").write_text(
        "from mypkg import compat as tf\n\n\n@tf.custom_gradient\ndef f(x):\n"
        "    def grad(dy, extra):\n        return dy\n    return x * 2.0, grad\n")
    cache = tmp_path / "cache"
    first = run("mypkg", "--format", "concise", cwd=tmp_path, cache=cache)
    assert first.returncode == 1 and "CG002" in first.stdout
    assert entries(cache) == []
    compat.write_text("def custom_gradient(*grad_funcs):\n    return lambda f: f\n")
    second = run("mypkg", "--format", "concise", cwd=tmp_path, cache=cache)
    assert (second.returncode, second.stdout) == (0, "")
