"""Real faults against the linter: failed writes, kills, special files, limits, broken configuration.

Every fault is a real one: writes fail because the kernel refuses them (RLIMIT_FSIZE, a full
tmpfs, a read-only folder), processes are killed with real signals, FIFOs and devices are real.
The bound of every run is the subprocess timeout (a hang fails the test), never a timed assertion.
Root runs drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH in the child so permission faults are real too.
"""

from __future__ import annotations

import ctypes
import os
import random
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEMP_SUFFIX = ".cg-lint.tmp"

HEAD = "import tensorflow as tf\n"
# one CG001 each (fixable): `return y, y * 2.0, grad` -> `return (y, y * 2.0), grad`
FUNCTION = """

@tf.custom_gradient
def f{i}(x, w):
    y = x * w + {i}
    def grad(dy, dz):
        return dy * w, dz
    return y, y * 2.0, grad
"""


def source(n: int = 1, padding: int = 0) -> str:
    """``n`` fixable functions after ``padding`` bytes of comments (cheap to lint, slow to write)."""
    pad = "".join(f"# padding line {i:08d} " + "." * 60 + "\n" for i in range(padding // 80))
    return HEAD + pad + "".join(FUNCTION.format(i=i) for i in range(n))


def fixed(text: str) -> str:
    return text.replace("    return y, y * 2.0, grad\n", "    return (y, y * 2.0), grad\n")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}


def run(*args: str, cwd: Path | None = None, timeout: float = 120, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cg_lint", *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(), timeout=timeout, preexec_fn=preexec)


def one_line_errors(proc: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return [line for line in proc.stderr.splitlines() if ": error: " in line]


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX))


# --- faults the kernel injects -------------------------------------------------------------

def _limit_file_size(size: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit then fail with EFBIG
    return apply


def _drop_dac_override() -> None:
    """Make permission checks apply to root too: drop the capabilities that bypass them from the
    bounding set, so the exec'ed interpreter never holds them (a no-op for other users)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(99)


def _permission_checks_work(tmp_path: Path) -> bool:
    locked = tmp_path / "probe"
    locked.mkdir()
    locked.chmod(0)
    try:
        proc = subprocess.run([sys.executable, "-c", f"import os; os.listdir({str(locked)!r})"],
                              capture_output=True, preexec_fn=_drop_dac_override, timeout=60)
        return proc.returncode != 0
    finally:
        locked.chmod(0o700)
        locked.rmdir()


def test_a_failed_write_leaves_the_file_untouched_and_the_others_fixed(tmp_path: Path) -> None:
    # before: the file was truncated and rewritten in place, so EFBIG left it cut at the limit
    small, large = tmp_path / "small.py", tmp_path / "large.py"
    small.write_text(source(1))
    large.write_text(source(100))
    limit = 8192
    assert small.stat().st_size < limit < large.stat().st_size
    original = large.read_bytes()
    proc = run("--fix", "--isolated", "-q", str(small), str(large), preexec=_limit_file_size(limit))
    assert proc.returncode == 2
    assert one_line_errors(proc) == [f"{large}: error: cannot write the fixes: File too large (the file is unchanged)"]
    assert large.read_bytes() == original
    assert small.read_text() == fixed(source(1))
    assert temporaries(tmp_path) == []


def test_a_full_file_system_leaves_the_file_untouched(tmp_path: Path) -> None:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                                           capture_output=True, timeout=60).returncode != 0:
        pytest.skip("needs root and a tmpfs mount")
    try:
        target = mount / "model.py"
        target.write_text(source(1, padding=40_000))  # the copy does not fit beside the original
        original = target.read_bytes()
        proc = run("--fix", "--isolated", "-q", str(target))
        assert proc.returncode == 2
        assert one_line_errors(proc) == [
            f"{target}: error: cannot write the fixes: No space left on device (the file is unchanged)"]
        assert target.read_bytes() == original
        assert temporaries(mount) == []
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True, timeout=60)


def test_a_read_only_folder_or_file_is_reported_and_untouched(tmp_path: Path) -> None:
    if not _permission_checks_work(tmp_path):
        pytest.skip("permission checks cannot be made to apply here")
    folder = tmp_path / "ro"
    folder.mkdir()
    in_folder = folder / "a.py"
    in_folder.write_text(source(1))
    folder.chmod(0o555)
    read_only = tmp_path / "b.py"
    read_only.write_text(source(1))
    read_only.chmod(0o444)
    try:
        proc = run("--fix", "--isolated", "-q", str(in_folder), str(read_only), preexec=_drop_dac_override)
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 2
    assert sorted(one_line_errors(proc)) == sorted([
        f"{in_folder}: error: cannot write the fixes: Permission denied (the file is unchanged)",
        f"{read_only}: error: cannot write the fixes: Permission denied (the file is unchanged)"])
    assert in_folder.read_text() == source(1) and read_only.read_text() == source(1)
    assert stat.S_IMODE(read_only.stat().st_mode) == 0o444
    assert temporaries(folder) == [] and temporaries(tmp_path) == []


def test_fix_keeps_mode_and_symlink(tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    target.write_text(source(1))
    target.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to("real.py")
    proc = run("--fix", "--isolated", "-q", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "real.py"
    assert target.read_text() == fixed(source(1))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert temporaries(tmp_path) == []


@pytest.mark.slow
def test_sigkill_during_fix_leaves_the_original_or_the_fixed_file(tmp_path: Path) -> None:
    """Killed at random moments: the file is always whole (original or fixed), never truncated."""
    text = source(3, padding=1_500_000)
    expected = fixed(text).encode()
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "m.py").write_text(text)
    start = time.monotonic()
    proc = run("--fix", "--isolated", "-q", str(reference / "m.py"))
    duration = time.monotonic() - start
    assert proc.returncode == 0 and (reference / "m.py").read_bytes() == expected
    rng = random.Random(16)
    folder = tmp_path / "work"
    folder.mkdir()
    target = folder / "m.py"
    outcomes = {"original": 0, "fixed": 0}
    for attempt in range(24):
        target.write_text(text)
        child = subprocess.Popen([sys.executable, "-m", "cg_lint", "--fix", "--isolated", "-q", str(target)],
                                 env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # moments spread over the whole run and past it (load varies), each jittered: the later
        # ones fall around the write
        time.sleep(duration * 1.6 * (attempt + rng.random()) / 24)
        child.kill()
        child.wait(timeout=60)
        data = target.read_bytes()
        assert data in (text.encode(), expected), f"a kill left {len(data)} bytes"
        outcomes["original" if data == text.encode() else "fixed"] += 1
        left = temporaries(folder)
        if left:
            # only a kill in the instant between naming the synced copy and renaming it leaves one;
            # the next run on the file removes it
            assert run("--fix", "--isolated", "-q", str(target)).returncode == 0
            assert temporaries(folder) == []
        assert temporaries(folder) == []
    assert outcomes["original"] + outcomes["fixed"] == 24
    print(f"kills: {outcomes}")


# --- processes left behind -----------------------------------------------------------------

def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(entry))
    return out


def _descendants(pid: int) -> set[int]:
    found = _children(pid)
    for child in list(found):
        found |= _descendants(child)
    return found


def _start_time(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _default_signals() -> None:
    """Under nohup or in a background job SIGHUP/SIGINT arrive ignored, and cg-lint rightly keeps
    them so: the child gets the defaults an interactive run has."""
    for signum in (signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


@pytest.fixture(scope="module")
def pooled_tree(tmp_path_factory) -> Path:
    """Enough candidate source for cg-lint to start its pool, and to keep it busy for a while."""
    tree = tmp_path_factory.mktemp("pooled")
    for k in range(24):
        (tree / f"m{k}.py").write_text(source(150))
    return tree


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGHUP])
def test_a_killed_pooled_run_leaves_no_process(pooled_tree: Path, signum: int) -> None:
    # before: SIGTERM and SIGKILL left both workers running with parent 1
    child = subprocess.Popen([sys.executable, "-m", "cg_lint", "-q", "-j2", "--isolated", "--no-cache", str(pooled_tree)],
                             env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=_default_signals)
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and child.poll() is None and time.monotonic() < deadline:
            workers = _descendants(child.pid)
            time.sleep(0.02)
        assert len(workers) >= 2, "the pool never started"
        started = {pid: _start_time(pid) for pid in workers}
        child.send_signal(signum)
        returncode = child.wait(timeout=60)
        _, stderr = child.communicate(timeout=60)  # a worker still holding the pipe would hang here
        assert returncode == (-9 if signum == signal.SIGKILL else 128 + signum)
        assert b"Traceback" not in stderr
        alive: list[int] = []
        for _ in range(100):  # a worker of a SIGKILLed parent gets its own SIGKILL from the kernel
            alive = [pid for pid, when in started.items() if when is not None and _start_time(pid) == when]
            if not alive:
                break
            time.sleep(0.05)
        assert alive == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=60)
        for pid, when in {p: _start_time(p) for p in workers}.items():
            if when is not None:
                os.kill(pid, signal.SIGKILL)


# --- special files -------------------------------------------------------------------------

def test_fifos_and_devices_are_one_line_each_and_never_opened(tmp_path: Path) -> None:
    # before: cg-lint blocked forever opening the FIFO
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "model.py").write_text(source(1))
    os.mkfifo(tree / "sub" / "pipe.py")
    named_fifo = tmp_path / "named.py"
    os.mkfifo(named_fifo)
    (tree / "zero.py").symlink_to("/dev/zero")  # symlinks are followed: the device is not read
    (tree / "linked.py").symlink_to(tree / "model.py")  # ... and a regular target is linted
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(tree / "sock.py"))
    try:
        for extra in ((), ("--fix",)):
            proc = run("--isolated", "--format", "concise", *extra, str(named_fifo), str(tree), timeout=60)
            assert proc.returncode == 2
            assert sorted(one_line_errors(proc)) == sorted([
                f"{named_fifo}: error: not a regular file (a FIFO)",
                f"{tree}/zero.py: error: not a regular file (a character device)",
                f"{tree}/sock.py: error: not a regular file (a socket)",
                f"{tree}/sub/pipe.py: error: not a regular file (a FIFO)",
            ])
    finally:
        server.close()
    assert (tree / "model.py").read_text() == fixed(source(1))


def test_a_fifo_config_is_an_error_not_a_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pyproject.toml")
    (tmp_path / "m.py").write_text(source(1))
    proc = run("--config", str(tmp_path / "pyproject.toml"), str(tmp_path / "m.py"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"cg-lint: error: {tmp_path}/pyproject.toml: not a regular file (a FIFO)\n"


@pytest.mark.slow
def test_flake8_itself_blocks_on_a_fifo(tmp_path: Path) -> None:
    """flake8 opens every file it is given before any plugin runs (flake8.processor reads the lines),
    so a FIFO named *.py blocks it: the plugin cannot prevent that, and the docs say so. This test
    fails, to update the docs, the day flake8 stops blocking."""
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", str(fifo)],
                       capture_output=True, env=_env(), timeout=10)


def test_unsearchable_folders_are_one_line(tmp_path: Path) -> None:
    # before: a file named inside a folder without search permission was a PermissionError traceback
    if not _permission_checks_work(tmp_path):
        pytest.skip("permission checks cannot be made to apply here")
    locked = tmp_path / "locked"
    (locked / "inner").mkdir(parents=True)
    (locked / "inner" / "m.py").write_text(source(1))
    locked.chmod(0)
    try:
        proc = run("--isolated", str(locked / "inner" / "m.py"), str(locked), preexec=_drop_dac_override, timeout=60)
        unlocked = run(str(locked / "inner" / "m.py"), preexec=_drop_dac_override, timeout=60)  # config search too
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 2
    assert one_line_errors(proc) == [f"{locked}/inner/m.py: error: cannot read: Permission denied",
                                     f"{locked}: error: cannot read folder: Permission denied"]
    assert unlocked.returncode == 2
    assert one_line_errors(unlocked) == [f"{locked}/inner/m.py: error: cannot read: Permission denied"]


# --- limits --------------------------------------------------------------------------------

def test_a_large_candidate_is_one_line_and_a_large_other_file_is_fine(tmp_path: Path) -> None:
    # before: a 10 MB candidate took 43 s and 2.8 GB; the memory cap turns that into a failure
    big = tmp_path / "big.py"
    big.write_text(source(1, padding=3 * 1024 * 1024))
    other = tmp_path / "table.py"
    other.write_text("TABLE = [\n" + "    1,\n" * 500_000 + "]\n")
    cap = 1 << 30

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    proc = run("--isolated", str(big), str(other), preexec=capped, timeout=60)
    assert proc.returncode == 2
    size = big.stat().st_size / (1024 * 1024)
    assert size > 3
    assert one_line_errors(proc) == [f"{big}: error: file too large to check ({size:.1f} MB > 2.0 MB limit)"]
    (tmp_path / "pyproject.toml").write_text("[tool.cg_lint]\nmax-file-size = 4_000_000\n")
    proc = run("--format", "concise", str(big), preexec=capped, timeout=300)
    assert proc.returncode == 1 and one_line_errors(proc) == [] and "CG001" in proc.stdout


def test_too_many_definitions_and_long_comparisons_are_one_line(tmp_path: Path) -> None:
    # before: 50,000 custom gradients took 347 s; a 100,000-term comparison ~20 s
    many = tmp_path / "many.py"
    many.write_text(HEAD + "".join(f"\n@tf.custom_gradient\ndef f{i}(x):\n    return x, lambda d: d\n"
                                   for i in range(2500)))
    chain = tmp_path / "chain.py"
    condition = " < ".join(["dy"] * 100_000)
    chain.write_text(HEAD + "\n@tf.custom_gradient\ndef f(x):\n    def grad(dy):\n        if " + condition
                     + ":\n            return dy\n        return dy\n    return x, grad\n")
    proc = run("--isolated", str(many), str(chain), timeout=60)
    assert proc.returncode == 2
    assert one_line_errors(proc) == [
        f"{many}: error: not analysed: too many custom gradients to check (2500 lines name a "
        "custom-gradient marker > 2000 limit)",
        f"{chain}:4:1: error: not analysed: a comparison chains more than 1000 terms"]


# --- configuration -------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "message"), [
    ("tool = 5\n", "'tool' must be a table ([tool.cg_lint] is read from it), not an integer"),
    ("[tool.cg_lint\n", "invalid TOML: Expected ']' at the end of a table declaration (at line 1, column 14)"),
    ("[tool]\ncg_lint = 5\n", "[tool.cg_lint] must be a table"),
    ("[tool.cg_lint]\nmax-file-size = 1e309\n", "'tool.cg_lint.max-file-size' must be a positive number of bytes"),
    (b"[tool.cg_lint]\nselect = ['\xff']\n", "invalid TOML: not UTF-8 at byte 26"),
])
def test_every_configuration_error_is_one_line_naming_the_file(tmp_path: Path, content, message) -> None:
    # before: `tool = 5` was a TypeError traceback, and invalid TOML was skipped without a word
    config = tmp_path / "pyproject.toml"
    if isinstance(content, bytes):
        config.write_bytes(content)
    else:
        config.write_text(content)
    (tmp_path / "m.py").write_text(source(1))
    proc = run("m.py", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"cg-lint: error: {config}: {message}\n"


@pytest.mark.parametrize(("jobs", "ok"), [("auto", True), ("0", True), ("1", True), ("2", True), ("-1", False),
                                          ("many", False)])
def test_jobs(tmp_path: Path, jobs: str, ok: bool) -> None:
    (tmp_path / "m.py").write_text(source(1))
    proc = run("--isolated", "-q", "-j", jobs, str(tmp_path / "m.py"), timeout=60)
    if ok:
        assert proc.returncode == 1 and proc.stderr == ""
    else:
        assert proc.returncode == 2
        assert proc.stderr == (f"cg-lint: error: argument -j/--jobs: '{jobs}' is not a number of jobs "
                               "(a positive integer, 0 or auto)\n")


# --- form feeds ----------------------------------------------------------------------------

def test_form_feed_indentation_is_fixed_faithfully(tmp_path: Path) -> None:
    # before: `\f    return x, x * 2.0, grad` became `\f    return(x, x * 2.0), gradd` (a NameError)
    body = ("import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x):\n    def grad(da, db):\n"
            "        return da + db\n\f    return x, x * 2.0, grad  # keep\n")
    target = tmp_path / "ff.py"
    target.write_bytes(body.encode())
    proc = run("--fix", "--isolated", str(target), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert target.read_bytes() == body.replace("return x, x * 2.0, grad", "return (x, x * 2.0), grad").encode()


def test_form_feed_before_a_block_parses(tmp_path: Path) -> None:
    # before: `cannot parse: tokenizer error: no matching outer block for dedent`, findings lost
    body = ("import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x):\n\f    def grad(dy, dz):\n"
            "        return dy\n    return x, x * 2.0, grad\n")
    compile(body, "ff.py", "exec")
    target = tmp_path / "ff.py"
    target.write_bytes(body.encode())
    proc = run("--isolated", "--format", "concise", str(target), timeout=60)
    assert one_line_errors(proc) == []
    assert proc.stdout.splitlines() == [
        f"{target}:7:5: CG001 [*] 'f' returns 3 values (x, x * 2.0, grad); TF unpacks exactly two: "
        "return (x, x * 2.0), grad"]


def test_no_temporary_files_or_processes_after_a_normal_fix(tmp_path: Path) -> None:
    for k in range(3):
        (tmp_path / f"m{k}.py").write_text(source(2))
    proc = run("--fix", "--isolated", "-q", str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert temporaries(tmp_path) == []
    assert all((tmp_path / f"m{k}.py").read_text() == fixed(source(2)) for k in range(3))
    shutil.rmtree(tmp_path / "m0.py", ignore_errors=True)


def test_flake8_plugin_says_once_what_the_limits_turn_away(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_text(source(1, padding=3 * 1024 * 1024))
    many = tmp_path / "many.py"
    many.write_text(HEAD + "".join(f"\n@tf.custom_gradient\ndef f{i}(x):\n    return x, lambda d: d\n"
                                   for i in range(2500)))
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", str(big), str(many)],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert "Traceback" not in proc.stderr
    size = big.stat().st_size / (1024 * 1024)
    assert sorted(proc.stdout.splitlines()) == sorted([
        f"{big}:1:1: CG999 cg-lint file too large to check ({size:.1f} MB > 2.0 MB limit)",
        f"{many}:1:1: CG999 cg-lint not analysed: too many custom gradients to check (2500 lines name a "
        "custom-gradient marker > 2000 limit)"])


def test_a_large_buffer_on_stdin_is_one_line_and_given_back_whole() -> None:
    text = source(1, padding=3 * 1024 * 1024).encode()
    for extra in ((), ("--fix",)):
        proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", *extra, "-", "--stdin-filename", "m.py"],
                              input=text, capture_output=True, env=_env(), timeout=60)
        assert proc.returncode == 2
        size = len(text) / (1024 * 1024)
        assert proc.stderr.decode() == f"m.py: error: file too large to check ({size:.1f} MB > 2.0 MB limit)\n"
        assert proc.stdout == (text if extra else b"")
