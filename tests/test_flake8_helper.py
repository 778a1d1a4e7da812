"""The flake8 plugin's warm helper (cg_lint/helper), with real flake8 processes and real helpers.

Each test runs flake8 with a runtime folder, a result cache and a cache home of its own (the user's
are never read, so the tests hold with a warm user cache and under nohup), and stops every helper
it started (tests/conftest.py fails the run otherwise). What the helper answers must equal what
flake8 prints when it lints in-process, and what the CLI finds; every failure of the helper must
give those same findings.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from helper_procs import HELPER_PREFIX, helper_pids, runtime_dir, session, stop_helpers
from lint_helpers import ROOT
from test_cli import BAD
from test_trace_context import EAGER, OPS, TRACED, _tree

pytest.importorskip("flake8")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the helper runs on Linux only")

ARITY = (ROOT / "examples" / "arity.py").read_text(encoding="utf-8")


class Setup:
    """One test's helper world: a runtime folder (short: a socket path has at most 107 bytes)."""

    def __init__(self, tmp_path: Path, pythonpath: Path = ROOT, **env: str) -> None:
        self.runtime = Path(tempfile.mkdtemp(prefix=os.path.basename(HELPER_PREFIX), dir="/tmp"))
        self.folder = self.runtime / "cg-lint"
        base = {k: v for k, v in os.environ.items() if k != "CG_LINT_NO_HELPER"}
        self.env = {**base, "PYTHONPATH": str(pythonpath), "XDG_RUNTIME_DIR": str(self.runtime),
                    "CG_LINT_CACHE_DIR": str(tmp_path / ".cg-cache"), "XDG_CACHE_HOME": str(tmp_path / ".home-cache"),
                    "CG_LINT_HELPER_IDLE": "120", **env}
        self.off = dict(self.env, CG_LINT_NO_HELPER="1")

    def flake8(self, *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None,
               ) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", *args], cwd=cwd,
                              env=env or self.env, input=stdin, capture_output=True, text=True, timeout=300)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def popen(self, *args: str, cwd: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", *args], cwd=cwd,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def pids(self) -> list[int]:
        return helper_pids(runtime_dir(str(self.runtime)))

    def command(self, *args: str) -> subprocess.CompletedProcess:
        # run outside the checkout: `python -m` puts the working folder first on sys.path
        return subprocess.run([sys.executable, "-m", "cg_lint", "helper", *args], env=self.env, cwd=self.runtime,
                              capture_output=True, text=True, timeout=60)

    def identity(self) -> str:
        return subprocess.run([sys.executable, "-c", "from cg_lint.helper import place; print(place.identity())"],
                              env=self.env, cwd=self.runtime, capture_output=True, text=True,
                              check=True).stdout.strip()

    def socket(self, ident: str | None = None) -> Path:
        return self.folder / f"h-{ident or self.identity()}.sock"

    def requests(self) -> int:
        """Files the running helper of this build has linted (it must be running)."""
        out = self.command("status").stdout
        assert "helper of this cg-lint" in out, out
        return int(out.split("pid ")[1].split(", ")[1].split()[0])

    def wait_ready(self, timeout: float = 120.0) -> int:
        """The helper's pid, once it answers and is the only one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = self.pids()  # a helper that lost the start-up lock may still be on its way out
            if len(pids) == 1 and "helper of this cg-lint" in self.command("status").stdout:
                return pids[0]
            time.sleep(0.1)
        raise AssertionError(f"no helper answered: {self.pids()}")

    def wait_gone(self, pid: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while pid in self.pids():
            assert time.monotonic() < deadline, f"helper {pid} still running"
            time.sleep(0.05)

    def close(self) -> None:
        stop_helpers(runtime_dir(str(self.runtime)))
        for path in (self.runtime, *self.runtime.rglob("*")):  # a test may have handed it to nobody
            with _quiet():
                os.chown(path, os.getuid(), os.getgid(), follow_symlinks=False)
        shutil.rmtree(self.runtime, ignore_errors=True)


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


@pytest.fixture
def setup(tmp_path: Path):
    made: list[Setup] = []

    def _make(**kwargs) -> Setup:
        made.append(Setup(tmp_path, **kwargs))
        return made[-1]

    yield _make
    for s in made:
        s.close()


def started(s: Setup, cwd: Path) -> int:
    """Start the helper as an editor's first save does (that run lints in-process), wait for it."""
    (cwd / "first.py").write_text(BAD)
    s.flake8("first.py", cwd=cwd)
    return s.wait_ready()


def cli_lines(path: Path, cwd: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--no-cache", "--format", "concise", str(path)],
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                          timeout=300)
    return [line.replace(" [*] ", " ") for line in proc.stdout.splitlines() if ": CG" in line]  # [*]: a fix


def relative(lines: list[str], root: Path) -> list[str]:
    return [line.replace(str(root) + os.sep, "") for line in lines]


# -- the answers -------------------------------------------------------------------------------

def test_the_helper_answers_as_flake8_in_process_and_the_cli(setup, tmp_path: Path) -> None:
    s = setup()
    work = tmp_path / "w"
    work.mkdir()
    (work / "arity.py").write_text(ARITY)
    first = s.flake8("arity.py", cwd=work)  # no helper yet: lints in-process, starts one
    s.wait_ready()
    assert s.requests() == 0
    with_helper = s.flake8("--cg-no-cache", "arity.py", cwd=work)
    assert s.requests() == 1
    alone = s.flake8("--cg-no-cache", "arity.py", cwd=work, env=s.off)
    assert with_helper.stdout == alone.stdout == first.stdout
    assert with_helper.stdout.splitlines() == relative(cli_lines(work / "arity.py", work), work)
    assert len(with_helper.stdout.splitlines()) == 3
    # an edit in a custom gradient (a result-cache miss) is answered by the helper; the next run
    # from the cache entry it wrote
    line = "        n = tf.cast(tf.size(x), x.dtype)\n"
    assert line in ARITY
    (work / "arity.py").write_text(ARITY.replace(line, line + "        n = n + 0\n"))
    edited = s.flake8("arity.py", cwd=work)
    assert s.requests() == 2
    assert edited.stdout == s.flake8("--cg-no-cache", "arity.py", cwd=work, env=s.off).stdout
    assert s.flake8("arity.py", cwd=work).stdout == edited.stdout and s.requests() == 2
    # an edit that keeps the line count: the helper re-parses only the statements it touched
    again = ARITY.replace(line, line.replace("x.dtype)", "x.dtype)  # same lines"))
    assert again != ARITY
    (work / "arity.py").write_text(again)
    assert s.flake8("arity.py", cwd=work).stdout == s.flake8("--cg-no-cache", "arity.py", cwd=work, env=s.off).stdout
    assert s.requests() == 3
    # stdin, as editors send the buffer
    piped = s.flake8("--cg-no-cache", "--stdin-display-name", "pkg/arity.py", "-", cwd=work, stdin=ARITY)
    assert s.requests() == 4
    assert piped.stdout == first.stdout.replace("arity.py", "pkg/arity.py")


def test_the_project_is_read_fresh_for_each_request(setup, tmp_path: Path) -> None:
    """The trace context reads other modules: a module added between two runs counts at once."""
    s = setup()
    root = _tree(tmp_path / "proj", {"ops.py": OPS, **EAGER["a script's top level"]})
    started(s, tmp_path)
    assert s.flake8("--cg-no-cache", "ops.py", cwd=root).stdout == ""
    assert s.requests() == 1
    (root / "train.py").write_text(textwrap.dedent(TRACED["tf.function in another module"]["train.py"]))
    traced = s.flake8("--cg-no-cache", "ops.py", cwd=root)
    assert s.requests() == 2
    assert [line.split(": ")[1].split()[0] for line in traced.stdout.splitlines()] == ["CG009"]
    assert traced.stdout == s.flake8("--cg-no-cache", "ops.py", cwd=root, env=s.off).stdout


def test_configuration_reaches_the_helper(setup, tmp_path: Path) -> None:
    """[tool.cg_lint] is read by the flake8 process and sent: an ignore the helper must honour."""
    s = setup()
    started(s, tmp_path)
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[tool.cg_lint]\nignore = ["CG001"]\n')
    (proj / "arity.py").write_text(ARITY)
    answered = s.flake8("--cg-no-cache", "arity.py", cwd=proj)
    assert s.requests() == 1
    assert "CG001" not in answered.stdout and "CG003" in answered.stdout
    assert answered.stdout == s.flake8("--cg-no-cache", "arity.py", cwd=proj, env=s.off).stdout


# -- the off switches ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["env", "option", "pyproject"])
def test_off_switches_start_no_helper(setup, tmp_path: Path, how: str) -> None:
    s = setup()
    (tmp_path / "arity.py").write_text(ARITY)
    args = ["arity.py"]
    env = s.env
    if how == "env":
        env = s.off
    elif how == "option":
        args.insert(0, "--cg-no-helper")
    else:
        (tmp_path / "pyproject.toml").write_text("[tool.cg_lint]\nflake8-helper = false\n")
    proc = s.flake8(*args, cwd=tmp_path, env=env)
    assert len(proc.stdout.splitlines()) == 3
    assert not s.folder.exists() and s.pids() == []  # never even looked for one


def test_a_run_over_many_files_lints_in_process(setup, tmp_path: Path) -> None:
    """CI and pre-commit name many files (or a folder) and lint them in parallel: one helper would
    serialise them. Only a flake8 given one file, as an editor's, asks the helper."""
    s = setup()
    started(s, tmp_path)
    work = tmp_path / "many"
    work.mkdir()
    (work / "a.py").write_text(ARITY)
    (work / "b.py").write_text(BAD)
    for args in (["a.py", "b.py"], ["."], ["-j", "2", "."]):
        proc = s.flake8("--cg-no-cache", *args, cwd=work)
        assert proc.stdout == s.flake8("--cg-no-cache", *args, cwd=work, env=s.off).stdout
        assert len(proc.stdout.splitlines()) == 4
    assert s.requests() == 0
    s.flake8("--cg-no-cache", "a.py", cwd=work)
    assert s.requests() == 1


def test_flake8_helper_must_be_a_boolean(setup, tmp_path: Path) -> None:
    s = setup()
    (tmp_path / "pyproject.toml").write_text('[tool.cg_lint]\nflake8-helper = "no"\n')
    (tmp_path / "arity.py").write_text(ARITY)
    out = s.flake8("arity.py", cwd=tmp_path, env=s.off).stdout
    assert out.strip().endswith("'tool.cg_lint.flake8-helper' must be true or false"), out


# -- its life ------------------------------------------------------------------------------------

def test_status_and_stop(setup, tmp_path: Path) -> None:
    s = setup()
    assert s.command("status").stdout == "no helper running\n"
    pid = started(s, tmp_path)
    assert helper_pids(session()) == [pid]  # what conftest's end-of-run check looks for
    status = s.command("status")
    assert status.returncode == 0 and "helper of this cg-lint (cg-lint " in status.stdout
    assert f"pid {pid}, 0 files linted" in status.stdout
    stop = s.command("stop")
    assert stop.stdout == f"stopped the helper of this cg-lint (pid {pid})\n"
    s.wait_gone(pid)
    assert not s.socket().exists()
    assert s.command("status").stdout == "no helper running\n"
    bad = s.command("restart")
    assert (bad.returncode, bad.stderr) == (2, "cg-lint: error: usage: cg-lint helper status|stop\n")


def test_it_runs_detached_in_a_private_folder(setup, tmp_path: Path) -> None:
    s = setup()
    pid = started(s, tmp_path)
    assert os.getsid(pid) != os.getsid(0)  # a session of its own: a terminal's hang-up never reaches it
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)} == {os.devnull}
    assert stat.S_IMODE(os.lstat(s.folder).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(s.socket()).st_mode) == 0o600


def test_two_flake8_processes_at_once_start_one_helper(setup, tmp_path: Path) -> None:
    s = setup()
    for i in range(4):
        (tmp_path / f"m{i}.py").write_text(BAD)
    procs = [s.popen(f"m{i}.py", cwd=tmp_path) for i in range(4)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all("CG003" in out for out in outs)
    s.wait_ready()  # exactly one (it unpacks one pid)
    time.sleep(1.0)  # a second one would have found the lock by now and left
    assert len(s.pids()) == 1


def test_idle_exit(setup, tmp_path: Path) -> None:
    s = setup(CG_LINT_HELPER_IDLE="2")
    pid = started(s, tmp_path)
    s.wait_gone(pid, timeout=30)
    assert not s.socket().exists()
    assert "CG003" in s.flake8("--cg-no-cache", "first.py", cwd=tmp_path).stdout  # the next save starts one
    s.wait_ready()


def test_past_its_memory_bound_it_exits_after_answering(setup, tmp_path: Path) -> None:
    s = setup(CG_LINT_HELPER_MAX_MB="1")  # any helper is past 1 MB once it has imported libcst
    pid = started(s, tmp_path)  # answered `cg-lint helper status`, then saw its size
    s.wait_gone(pid, timeout=30)
    assert not s.socket().exists()
    (tmp_path / "arity.py").write_text(ARITY)
    assert s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path).stdout == \
        s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path, env=s.off).stdout


def test_a_removed_socket_ends_the_helper(setup, tmp_path: Path) -> None:
    s = setup(CG_LINT_HELPER_IDLE="8")  # checked every 2 s
    pid = started(s, tmp_path)
    s.socket().unlink()
    s.wait_gone(pid, timeout=30)


def test_version_changed_under_a_running_helper(setup, tmp_path: Path) -> None:
    """An edited (or upgraded) cg-lint is a new build: its flake8 runs never reach the old helper,
    which exits on its own; the new build gets a helper of its own."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "cg_lint", copy / "cg_lint", ignore=shutil.ignore_patterns("__pycache__"))
    s = setup(pythonpath=copy, CG_LINT_HELPER_IDLE="20")  # code checked every 5 s
    old_ident = s.identity()
    old = started(s, tmp_path)
    codes = copy / "cg_lint" / "codes.py"
    codes.write_text(codes.read_text() + "\n# edited\n")
    new_ident = s.identity()
    assert new_ident != old_ident
    # a request naming another build is refused (and ends the helper that gets it)
    refused = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from cg_lint.helper import client
        print(client._exchange({str(s.folder)!r}, {old_ident!r}, {{"op": "lint", "identity": "x"}}))
    """)], env=s.env, cwd=s.runtime, capture_output=True, text=True, timeout=60)
    assert refused.stdout.strip() == "None", refused.stderr
    s.wait_gone(old, timeout=30)
    (tmp_path / "arity.py").write_text(ARITY)
    first = s.flake8("arity.py", cwd=tmp_path)  # the new build: in-process, starts its own helper
    s.wait_ready()
    assert s.socket(new_ident).exists() and not s.socket(old_ident).exists()
    again = s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path)
    assert s.requests() == 1 and again.stdout == first.stdout


def test_code_edited_on_disk_ends_an_idle_helper(setup, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "cg_lint", copy / "cg_lint", ignore=shutil.ignore_patterns("__pycache__"))
    s = setup(pythonpath=copy, CG_LINT_HELPER_IDLE="20")
    pid = started(s, tmp_path)
    codes = copy / "cg_lint" / "codes.py"
    codes.write_text(codes.read_text() + "\n# edited\n")
    s.wait_gone(pid, timeout=30)


# -- failures: every one lints in-process, with the same findings ----------------------------------

def test_helper_killed_mid_request(setup, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from bench.gen_cg import generate

    s = setup()
    pid = started(s, tmp_path)
    (tmp_path / "big.py").write_text(generate(4000) + "\n\n" + ARITY)  # long to lint, with findings
    expected = s.flake8("--cg-no-cache", "big.py", cwd=tmp_path, env=s.off).stdout
    assert expected
    before = _cpu(pid)
    proc = s.popen("--cg-no-cache", "big.py", cwd=tmp_path)
    deadline = time.monotonic() + 120
    while _cpu(pid) - before < 0.05 and proc.poll() is None:  # the helper is at work on it
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert proc.poll() is None, "the request ended before the helper could be killed"
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert "Traceback" not in err
    assert out == expected
    # the dead helper's socket is left behind; the next run replaces it with a new helper
    assert s.flake8("--cg-no-cache", "first.py", cwd=tmp_path).stdout
    assert s.wait_ready() != pid


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


IMPOSTOR = """
import socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1])
sock.listen(8)
print("listening", flush=True)
while True:
    conn, _ = sock.accept()
    conn.recv(1 << 20)
    if sys.argv[2] == "garbage":
        conn.sendall(b"\\x00\\x00\\x00\\x05hello")
    elif sys.argv[2] == "another":
        conn.sendall(b'\\x00\\x00\\x00\\x2c{"ok":true,"identity":"x","findings":[]}   ')
    elif sys.argv[2] == "silent":
        time.sleep(60)
    conn.close()
"""


@pytest.mark.parametrize("answer", ["silent", "garbage", "another", "close"])
def test_an_impostor_at_the_socket_path(setup, tmp_path: Path, answer: str) -> None:
    """A listener that is not the helper (a dead helper's stand-in, a hung one): the client gives it
    a bounded time, then lints in-process."""
    s = setup(CG_LINT_HELPER_TIMEOUT="2")
    s.folder.mkdir(mode=0o700, parents=True)
    path = s.socket()
    impostor = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(path), answer], stdout=subprocess.PIPE,
                                text=True)
    try:
        assert impostor.stdout is not None and impostor.stdout.readline() == "listening\n"
        os.chmod(path, 0o600)
        (tmp_path / "arity.py").write_text(ARITY)
        start = time.monotonic()
        proc = s.flake8("arity.py", cwd=tmp_path)
        assert time.monotonic() - start < 60
        assert proc.stdout == s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path, env=s.off).stdout
        assert len(proc.stdout.splitlines()) == 3
        assert impostor.poll() is None  # it was asked (and answered wrong or not at all)
    finally:
        impostor.kill()
        impostor.wait()


def _nobody() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody'")
    if os.getuid() != 0:
        pytest.skip("handing files to another user needs root")
    return entry.pw_uid, entry.pw_gid


@pytest.mark.parametrize("case", ["folder-open", "folder-nobody", "folder-symlink", "socket-nobody",
                                  "socket-open"])
def test_a_folder_or_socket_not_the_users_alone_is_never_used(setup, tmp_path: Path, case: str) -> None:
    s = setup()
    (tmp_path / "arity.py").write_text(ARITY)
    expected = s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path, env=s.off).stdout
    if case.startswith("socket"):
        started(s, tmp_path)
        if case == "socket-nobody":
            os.chown(s.socket(), *_nobody(), follow_symlinks=False)
        else:
            os.chmod(s.socket(), 0o666)
        assert s.flake8("--cg-no-cache", "arity.py", cwd=tmp_path).stdout == expected
        os.chown(s.socket(), os.getuid(), os.getgid(), follow_symlinks=False)
        os.chmod(s.socket(), 0o600)
        assert s.requests() == 0  # the run did not use it
        return
    if case == "folder-open":
        s.folder.mkdir(mode=0o700, parents=True)
        os.chmod(s.folder, 0o755)
    elif case == "folder-nobody":
        s.folder.mkdir(mode=0o700, parents=True)
        os.chown(s.folder, *_nobody())
    else:
        real = s.runtime / "real"
        real.mkdir(mode=0o700)
        s.folder.symlink_to(real)
    assert s.flake8("arity.py", cwd=tmp_path).stdout == expected
    time.sleep(0.5)
    assert s.pids() == [] and not any(p.name.startswith("h-") for p in (s.runtime / "real").glob("*")) \
        and (case == "folder-symlink" or os.listdir(s.folder) == [])


def test_another_user_is_not_served(setup, tmp_path: Path) -> None:
    """SO_PEERCRED: even where another user can reach the socket, the helper answers nobody but
    its own user (the connection is closed without a word)."""
    uid, gid = _nobody()
    s = setup()
    started(s, tmp_path)
    for path in (s.runtime, s.folder):
        os.chmod(path, 0o711)
    os.chmod(s.socket(), 0o666)
    probe = textwrap.dedent(f"""
        import socket, struct
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        sock.connect({str(s.socket())!r})
        body = b'{{"op":"status","identity":"x"}}'
        try:
            sock.sendall(struct.pack(">I", len(body)) + body)
            print("closed" if sock.recv(100) == b"" else "answered")
        except (BrokenPipeError, ConnectionResetError):
            print("closed")
    """)
    python = shutil.which("python3", path="/usr/bin:/bin")  # one that user may run
    if python is None:
        pytest.skip("no system python3 for another user")
    proc = subprocess.run([python, "-c", probe], user=uid, group=gid, extra_groups=[], cwd="/",
                          capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert proc.stdout.strip() == "closed", (proc.stdout, proc.stderr)  # connected, then closed unanswered
    os.chmod(s.socket(), 0o600)
    for path in (s.runtime, s.folder):
        os.chmod(path, 0o700)
    assert s.requests() == 0


def test_the_documented_switches_are_the_real_ones(tmp_path: Path) -> None:
    """docs/editors.md's table names what the tests above turn off: the variable, the flake8 option
    (in flake8's help) and the [tool.cg_lint] key; both pages' sections exist for their links."""
    from cg_lint.config import KNOWN_KEYS
    from cg_lint.helper import place

    editors = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = editors.split("\n### The warm helper (Linux)\n")[1].split("\n## ")[0]
    table = "\n".join(row for row in section.splitlines() if row.startswith("| "))
    assert {"CG_LINT_NO_HELPER=1", "--cg-no-helper", "flake8-helper = false"} <= set(re.findall(r"`([^`]+)`", table))
    assert place.ENV_OFF == "CG_LINT_NO_HELPER" and "flake8-helper" in KNOWN_KEYS
    help_text = subprocess.run([sys.executable, "-m", "flake8", "--help"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                               capture_output=True, text=True, timeout=120).stdout
    assert "--cg-no-helper" in help_text
    assert "\n### The flake8 helper\n" in (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert "security.md#the-flake8-helper" in editors


def test_a_loop_of_runs_spawns_one_helper(setup, tmp_path: Path) -> None:
    """Until the helper holds its lock every run finds none: a loop of runs in one process (or a
    helper that cannot start) must not spawn a helper per run."""
    s = setup()
    script = textwrap.dedent("""
        from cg_lint.helper import client, place
        folder, ident = place.private_folder(create=True), place.identity()
        print(sum(client.start(folder, ident) for _ in range(30)))
    """)
    proc = subprocess.run([sys.executable, "-c", script], env=s.env, cwd=s.runtime, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.strip() == "1", proc.stdout + proc.stderr
    s.wait_ready()  # exactly one, and it answers
    assert not (s.folder / f"h-{s.identity()}.start").exists()  # taken: a dead helper's successor starts at once
