"""Fault injection for runtime-check: hostile modules and signals, on real processes.

Every process a hostile module starts carries the run's token in its environment (inherited from
the runtime-check process the test starts) and, when it execs, in its argv, so "no process is
left" is checked by scanning /proc for the token after the run. Each run's bound is the
subprocess timeout; nothing asserts a duration.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = [
    pytest.mark.tf,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

BOUND = 240  # seconds: any run that takes longer has hung

# A process that only sleeps, carrying the token in its argv (so it is found even without environ).
SLEEPER = (
    "[sys.executable, '-c', 'import time\\nwhile True: time.sleep(1)', "
    "os.environ['CG_FAULT_TOKEN']]"
)

CUSTOM = """
@tf.custom_gradient
def {name}(x):
    def grad(dy):
        return dy * 2.0
    return x * 2.0, grad
"""

HOSTILE = {
    # fork at import: the child keeps running the import's copy of the interpreter
    "fork_at_import.py": """
import os, sys, time
import tensorflow as tf
if os.fork() == 0:
    while True:
        time.sleep(1)
"""
    + CUSTOM.format(name="after_fork"),
    # a non-daemon thread started at import: the worker must not wait for it to exit
    "thread_at_import.py": """
import threading, time
import tensorflow as tf
threading.Thread(target=lambda: time.sleep(10 ** 6), daemon=False).start()
"""
    + CUSTOM.format(name="beside_thread"),
    # megabytes on stdout and stderr, without a newline
    "huge_output.py": """
import os, sys
import tensorflow as tf
sys.stdout.write("o" * (8 << 20))
sys.stderr.write("e" * (8 << 20))
os.write(1, b"x" * (8 << 20))

@tf.custom_gradient
def noisy(x):
    print("y" * (4 << 20))
    def grad(dy):
        return dy * 3.0
    return x * 3.0, grad
""",
    # handlers that ignore every polite signal, and a function that never returns
    "signal_handlers.py": """
import signal, time
import tensorflow as tf
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)

@tf.custom_gradient
def stubborn(x):
    while True:
        time.sleep(0.1)
"""
    + CUSTOM.format(name="polite"),
    # setsid + double fork in the forward: a daemon outside the worker's session and group
    "daemon_in_forward.py": f"""
import os, sys
import tensorflow as tf

PIDFILE = os.environ["CG_FAULT_PIDFILE"]

@tf.custom_gradient
def a_spawns_daemon(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(PIDFILE, "w") as handle:
                handle.write(str(os.getpid()))
            os.execv(sys.executable, {SLEEPER})
        os._exit(0)
    os.wait()
    while not os.path.exists(PIDFILE):
        pass
    def grad(dy):
        return dy
    return tf.identity(x), grad

def _alive(pid):
    try:
        with open(f"/proc/{{pid}}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

@tf.custom_gradient
def b_sees_no_daemon(x):
    with open(PIDFILE) as handle:
        leaked = _alive(int(handle.read()))
    def grad(dy):
        # a shape finding if and only if the daemon outlived a_spawns_daemon
        return tf.reduce_sum(dy) if leaked else dy
    return tf.identity(x), grad
""",
    "exit_at_import.py": """
import os
import tensorflow as tf
os._exit(3)
"""
    + CUSTOM.format(name="never_seen"),
    "exit_in_forward.py": """
import os
import tensorflow as tf

@tf.custom_gradient
def exits(x):
    os._exit(0)
"""
    + CUSTOM.format(name="survivor"),
    "hangs_at_import.py": """
import time
import tensorflow as tf
while True:
    time.sleep(0.1)
"""
    + CUSTOM.format(name="unreachable"),
}


def _env(make_env, token: str, **extra: str) -> dict[str, str]:
    return make_env(CG_FAULT_TOKEN=token, **extra)


def _leftovers(token: str) -> list[int]:
    """Processes whose environment or argv carries ``token`` (the test process never does)."""
    found = []
    needle = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as handle:
                    if needle in handle.read():
                        found.append(int(name))
                        break
            except OSError:
                break
    return found


def _assert_nothing_left(token: str) -> None:
    # the kill is synchronous; a short grace covers the kernel tearing down a process just killed
    for _ in range(50):
        left = _leftovers(token)
        if not left:
            return
        time.sleep(0.1)
    for pid in left:  # do not leak them into the rest of the suite
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"processes left behind by the run: {left}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    for name, source in HOSTILE.items():
        (root / name).write_text(textwrap.dedent(source))
    return root


@pytest.fixture(scope="module")
def hostile_run(hostile: Path, make_env):
    token = f"cg-fault-{uuid.uuid4().hex}"
    env = _env(make_env, token, CG_FAULT_PIDFILE=str(hostile / "daemon.pid"))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "runtime_check",
            "--format",
            "json",
            "--timeout",
            "8",
            "-j",
            "2",
            *HOSTILE,
        ],
        cwd=hostile,
        env=env,
        capture_output=True,
        timeout=BOUND,
    )
    left = _leftovers(token)
    _assert_nothing_left(token)
    return completed, json.loads(completed.stdout), left


@pytest.mark.slow
def test_hostile_modules_leave_no_process(hostile_run):
    completed, _findings, left = hostile_run
    assert completed.returncode == 1, completed.stderr[-2000:]
    assert left == [], "processes outlived the run"


def _codes(
    findings: list[dict], function: str | None = None, path_end: str | None = None
) -> set[str]:
    return {
        f["code"]
        for f in findings
        if (function is None or f["function"] == function)
        and (path_end is None or f["path"].endswith(path_end))
    }


@pytest.mark.slow
def test_each_hostile_module_gets_its_own_result(hostile_run):
    _completed, findings, _left = hostile_run
    # the healthy functions beside the hostile code are checked and clean
    for healthy in ("after_fork", "beside_thread", "noisy", "polite", "survivor"):
        assert _codes(findings, healthy) == set(), (healthy, findings)
    assert _codes(findings, "stubborn") == {
        "CG120"
    }  # ignoring SIGTERM does not help a hung function
    assert _codes(findings, "exits") == {"CG121"}
    # a module that exits or hangs while importing: one CG122 line each, the rest still checked
    (exit_import,) = [f for f in findings if f["path"].endswith("exit_at_import.py")]
    assert (
        exit_import["code"] == "CG122"
        and "crashed the process (exit status 3)" in exit_import["message"]
    )
    (hang_import,) = [f for f in findings if f["path"].endswith("hangs_at_import.py")]
    assert hang_import["code"] == "CG122" and "did not finish within 8 s" in hang_import["message"]


@pytest.mark.slow
def test_a_daemon_started_in_the_forward_dies_with_its_function(hostile: Path, make_env):
    # one worker, so b_sees_no_daemon runs after a_spawns_daemon in the same process
    token = f"cg-fault-{uuid.uuid4().hex}"
    pidfile = hostile / "daemon-j1.pid"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "runtime_check",
            "--format",
            "json",
            "-j",
            "1",
            "daemon_in_forward.py",
        ],
        cwd=hostile,
        env=_env(make_env, token, CG_FAULT_PIDFILE=str(pidfile)),
        capture_output=True,
        timeout=BOUND,
    )
    _assert_nothing_left(token)
    assert completed.returncode == 0, completed.stdout[-2000:] + completed.stderr[-2000:]
    assert json.loads(completed.stdout) == []
    assert pidfile.exists()  # the daemon was started, and was gone when the next function ran


MEMORY = """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def grows(x):
    blocks = [np.ones(1 << 24) for _ in range(32)]  # 4 GiB, 128 MiB at a time, every page touched
    def grad(dy):
        return dy
    return x + float(len(blocks)), grad

@tf.custom_gradient
def asks_for_too_much(x):
    huge = np.ones(1 << 42)  # 32 TiB: refused at once
    def grad(dy):
        return dy
    return x + huge[0], grad
""" + CUSTOM.format(name="modest")


@pytest.mark.slow
def test_memory_cap_is_its_own_code(tmp_path: Path, make_env):
    (tmp_path / "memory_hog.py").write_text(textwrap.dedent(MEMORY))
    token = f"cg-fault-{uuid.uuid4().hex}"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "runtime_check",
            "--format",
            "json",
            "--max-memory",
            "1500M",
            "memory_hog.py",
        ],
        cwd=tmp_path,
        env=_env(make_env, token),
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    _assert_nothing_left(token)
    assert completed.returncode == 1, completed.stderr
    findings = json.loads(completed.stdout)
    assert _codes(findings, "grows") == {"CG123"}
    assert _codes(findings, "asks_for_too_much") == {"CG123"}
    assert _codes(findings, "modest") == set()
    message = next(f["message"] for f in findings if f["function"] == "grows")
    assert "cap of 1500M" in message and "--max-memory" in message


INTERRUPTIBLE = """
import os, sys
import tensorflow as tf

@tf.custom_gradient
def a_shape_bug(x):
    def grad(dy):
        return tf.reduce_sum(dy)
    return x * 1.0, grad

@tf.custom_gradient
def b_hangs_with_a_daemon(x):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, SLEEPER)
        os._exit(0)
    open(os.environ["CG_FAULT_MARKER"], "w").close()  # the test signals the run once this exists
    while True:
        pass
""".replace("SLEEPER", SLEEPER)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_prints_results_so_far_and_leaves_nothing(
    sig: signal.Signals, tmp_path: Path, make_env
):
    (tmp_path / "interruptible.py").write_text(textwrap.dedent(INTERRUPTIBLE))
    token = f"cg-fault-{uuid.uuid4().hex}"
    marker = tmp_path / "hanging"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "runtime_check",
            "-j",
            "1",
            "--timeout",
            str(BOUND),
            "interruptible.py",
        ],
        cwd=tmp_path,
        env=_env(make_env, token, CG_FAULT_MARKER=str(marker)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + BOUND
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the hanging function never started"
        process.send_signal(sig)
        stdout, stderr = process.communicate(timeout=BOUND)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    _assert_nothing_left(token)
    assert process.returncode == 128 + sig.value, stderr
    # the function that finished before the signal is reported, with its finding and its row
    assert "CG101 'a_shape_bug'" in stdout
    (row,) = [
        ln for ln in stdout.splitlines() if ln.startswith("interruptible.py:b_hangs_with_a_daemon ")
    ]
    assert row.split("  ")[-1].strip() == "-" and "not finished (interrupted)" in row
    (last,) = [ln for ln in stderr.splitlines() if ln.strip()][-1:]
    assert last == (
        f"runtime-check: interrupted by {sig.name}: the results above cover 1 of 2 function(s) "
        "found so far"
    )
    assert "Traceback" not in stderr


@pytest.mark.parametrize("spawn", ["0", "1"], ids=["zygote", "spawn"])
def test_without_tensorflow_one_line_and_no_process(spawn: str, tmp_path: Path, make_env,
                                                    no_tensorflow: Path):
    blocker = no_tensorflow
    (tmp_path / "m.py").write_text(
        textwrap.dedent("import tensorflow as tf\n" + CUSTOM.format(name="f"))
    )
    token = f"cg-fault-{uuid.uuid4().hex}"
    env = _env(make_env, token, RUNTIME_CHECK_SPAWN=spawn)
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    completed = subprocess.run(
        [sys.executable, "-m", "runtime_check", "m.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    _assert_nothing_left(token)
    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        "runtime-check: error: runtime-check needs TensorFlow (the 'runtime' extra; pip install tensorflow): "
        "No module named 'tensorflow'"
    ]


@pytest.mark.slow
def test_spawned_workers_isolate_crashes_and_hangs_too(make_env):
    # the same isolation when each worker is a fresh interpreter instead of a fork of the zygote
    fixtures = Path(__file__).resolve().parent / "fixtures"
    token = f"cg-fault-{uuid.uuid4().hex}"
    completed = subprocess.run(
        [sys.executable, "-m", "runtime_check", "--format", "json", "--timeout", "8", "crashy.py"],
        cwd=fixtures,
        env=_env(make_env, token, RUNTIME_CHECK_SPAWN="1"),
        capture_output=True,
        text=True,
        timeout=BOUND,
    )
    _assert_nothing_left(token)
    findings = json.loads(completed.stdout)
    assert _codes(findings, "aborts") == {"CG121"}
    assert "signal SIGABRT" in next(f["message"] for f in findings if f["function"] == "aborts")
    assert _codes(findings, "never_returns") == {"CG120"}
    assert _codes(findings, "shape_bug_after") == {"CG101"}
    assert _codes(findings, "healthy_before") == _codes(findings, "healthy_after") == set()


HANGS = """
import os
import tensorflow as tf

@tf.custom_gradient
def hangs(x):
    open(os.environ["CG_FAULT_MARKER"], "w").close()
    while True:
        pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("spawn", ["0", "1"], ids=["zygote", "spawn"])
def test_workers_die_with_a_killed_runtime_check(spawn: str, tmp_path: Path, make_env):
    # SIGKILL cannot be caught: the workers (and the zygote) die by their parent-death signal
    (tmp_path / "hangs.py").write_text(HANGS)
    token = f"cg-fault-{uuid.uuid4().hex}"
    marker = tmp_path / "hanging"
    env = _env(make_env, token, CG_FAULT_MARKER=str(marker), RUNTIME_CHECK_SPAWN=spawn)
    process = subprocess.Popen(
        [sys.executable, "-m", "runtime_check", "--timeout", str(BOUND), "hangs.py"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + BOUND
        while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the hanging function never started"
    finally:
        process.kill()
        process.wait()
    _assert_nothing_left(token)
