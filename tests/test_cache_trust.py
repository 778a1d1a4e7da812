"""The result cache is a trust boundary: what a repository holds never decides what is reported,
nor where cg-lint writes or deletes files.

Every fault is real: symlinks leading out of the project, a cache folder shipped with crafted (and
validly signed, by the attacker's own cg-lint) entries, entries edited by someone without the
secret, a FIFO in an entry's place, 100,000-deep JSON behind a valid signature.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cg_lint.result_cache import PRUNE_TO, SCHEMA, ResultCache, prune
from lint_helpers import ROOT
from test_cli import BAD

ENTRIES = f"results-v{SCHEMA}"


def run(*args: str, cwd: Path, user_cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1", CG_LINT_CACHE_DIR=str(user_cache),
               XDG_CACHE_HOME=str(user_cache.parent / "xdg"))
    return subprocess.run([sys.executable, "-m", "cg_lint", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


def seen(proc: subprocess.CompletedProcess) -> tuple[int, str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


def project(tmp_path: Path, cache_dir: str | None = None) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bad.py").write_text(BAD)
    if cache_dir is not None:
        (repo / "pyproject.toml").write_text(f'[tool.cg_lint]\ncache-dir = "{cache_dir}"\n')
    return repo


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("setting", ["../outside", "/tmp/../{outside}", "link", "link/sub", "src"])
def test_a_repository_cannot_place_the_cache_outside_itself_or_in_its_sources(tmp_path: Path, setting: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine\n")
    repo = project(tmp_path, setting.format(outside=outside))
    (repo / "link").symlink_to(outside)  # a symlink the repository ships
    (repo / "src").mkdir()
    (repo / "src" / "module.py").write_text("x = 1\n")
    user = tmp_path / "user-cache"
    reference = run("--no-cache", "bad.py", cwd=repo, user_cache=user)
    for _ in range(2):
        proc = run("bad.py", cwd=repo, user_cache=user)
        assert seen(proc) == seen(reference)
        assert "cg-lint: warning: the configured cache folder" in proc.stderr
    assert everything_under(outside) == ["keep.txt"]
    assert everything_under(repo / "src") == ["module.py"]
    assert len(list((user / ENTRIES).iterdir())) == 1  # the user's folder took the entry instead


def test_a_folder_inside_the_project_is_used_and_marked(tmp_path: Path) -> None:
    repo = project(tmp_path, ".cg_lint_cache")
    user = tmp_path / "user-cache"
    first = run("bad.py", cwd=repo, user_cache=user)
    assert "warning" not in first.stderr
    assert len(list((repo / ".cg_lint_cache" / ENTRIES).iterdir())) == 1
    assert (repo / ".cg_lint_cache" / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")


def test_a_shipped_cache_with_signed_entries_hides_nothing(tmp_path: Path) -> None:
    """The attacker lints the repository with their own cg-lint (their own secret), empties every
    entry and signs it again, then ships the folder: the victim's run sees the findings."""
    repo = project(tmp_path, ".cg_lint_cache")
    attacker = tmp_path / "attacker-cache"
    honest = run("--no-cache", "bad.py", cwd=repo, user_cache=attacker)
    assert honest.returncode == 1 and "CG003" in honest.stdout
    run("bad.py", cwd=repo, user_cache=attacker)
    secret = (attacker / "secret").read_bytes()
    forger = ResultCache(repo / ".cg_lint_cache", "unused", secret=secret)
    for entry in (repo / ".cg_lint_cache" / ENTRIES).iterdir():
        payload = json.loads(entry.read_bytes().partition(b"\n")[2])
        payload["findings"] = []
        data = json.dumps(payload).encode()
        entry.write_bytes(forger._mac(entry.name, data) + b"\n" + data)
    assert seen(run("bad.py", cwd=repo, user_cache=attacker))[0] == 0  # the attacker fooled only themselves
    victim = tmp_path / "victim-cache"
    assert seen(run("bad.py", cwd=repo, user_cache=victim)) == seen(honest)
    assert seen(run("bad.py", cwd=repo, user_cache=victim)) == seen(honest)  # and from its own entry


def test_an_entry_edited_without_the_secret_is_a_miss(tmp_path: Path) -> None:
    repo = project(tmp_path)
    user = tmp_path / "user-cache"
    cold = run("bad.py", cwd=repo, user_cache=user)
    [entry] = (user / ENTRIES).iterdir()
    mac, _, payload = entry.read_bytes().partition(b"\n")
    data = json.loads(payload)
    data["findings"] = []
    entry.write_bytes(mac + b"\n" + json.dumps(data, separators=(",", ":")).encode())
    assert seen(run("bad.py", cwd=repo, user_cache=user)) == seen(cold)


def test_a_fifo_in_place_of_an_entry_neither_hangs_nor_hides(tmp_path: Path) -> None:
    repo = project(tmp_path)
    user = tmp_path / "user-cache"
    cold = run("bad.py", cwd=repo, user_cache=user)
    [entry] = (user / ENTRIES).iterdir()
    entry.unlink()
    os.mkfifo(entry)  # nobody ever writes it: opening it for reading would block forever
    assert seen(run("bad.py", cwd=repo, user_cache=user)) == seen(cold)  # bounded by run()'s timeout
    assert entry.is_file()  # replaced by a real entry


def test_deep_json_behind_a_valid_signature_is_a_miss(tmp_path: Path) -> None:
    repo = project(tmp_path)
    user = tmp_path / "user-cache"
    cold = run("bad.py", cwd=repo, user_cache=user)
    [entry] = (user / ENTRIES).iterdir()
    signer = ResultCache(user, "unused", secret=(user / "secret").read_bytes())
    deep = b"[" * 100_000 + b"]" * 100_000
    entry.write_bytes(signer._mac(entry.name, deep) + b"\n" + deep)
    assert seen(run("bad.py", cwd=repo, user_cache=user)) == seen(cold)


def test_the_secret_is_private_and_refused_when_it_is_not(tmp_path: Path) -> None:
    repo = project(tmp_path)
    user = tmp_path / "user-cache"
    run("bad.py", cwd=repo, user_cache=user)
    secret = user / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_bytes()) == 32
    secret.chmod(0o644)  # readable by others, who could then sign entries: no cache at all
    again = run("bad.py", cwd=repo, user_cache=user)
    assert again.returncode == 1 and "CG003" in again.stdout


def test_a_trim_deletes_only_entries_and_never_through_a_symlink(tmp_path: Path) -> None:
    folder = tmp_path / ENTRIES
    folder.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    for i in range(50):
        (folder / f"{i:040x}").write_text("{}")
        os.utime(folder / f"{i:040x}", ns=(i * 10**9, i * 10**9))
    (folder / ("f" * 40)).symlink_to(outside)
    (folder / "notes.txt").write_text("not an entry\n")
    os.utime(folder / "notes.txt", ns=(0, 0))
    assert prune(folder, max_entries=40) == 50 - int(40 * PRUNE_TO)
    assert outside.read_text() == "mine\n" and (folder / "notes.txt").exists()
    assert (folder / ("f" * 40)).is_symlink()


def test_a_trim_never_removes_what_this_run_used(tmp_path: Path) -> None:
    folder = tmp_path / ENTRIES
    folder.mkdir()
    for i in range(50):
        (folder / f"{i:040x}").write_text("{}")
    # all 50 were used after the run began: over the bound, yet nothing is removed
    assert prune(folder, max_entries=10, keep_since=0) == 0
    assert len(list(folder.iterdir())) == 50
