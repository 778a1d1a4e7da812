from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path

import pytest

from helper_procs import SESSION, helper_pids, session, stop_helpers

# The flake8 plugin's warm helper (cg_lint/helper) is off for every flake8 a test starts, unless the
# test turns it on with a runtime folder of its own (tests/test_flake8_helper.py): a helper left in
# the user's folder would answer later runs, and would outlive the run.
os.environ["CG_LINT_NO_HELPER"] = "1"
os.environ[SESSION[0]] = SESSION[1]  # inherited by every process a test starts: helpers are found

# Under nohup, or `&` in a non-interactive shell, SIGINT (and with nohup SIGHUP) arrive ignored and
# every child inherits that, so the tests that stop a child with them would see it run on. A signal
# this process catches is reset to its default in a child at exec: catch them here, harmlessly.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda signum, frame: None)  # still no hang-up for the run itself


@pytest.fixture
def write(tmp_path: Path):
    """Write a dedented source file under tmp_path and return its path."""

    def _write(name: str, source: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, bytes):
            path.write_bytes(source)
        else:
            path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
        return path

    return _write


@pytest.fixture(scope="session", autouse=True)
def no_helper_outlives_the_run():
    """Fails the run (as an error of its last test) if a helper a test started is still running:
    each test that starts one must stop it. They are stopped here either way."""
    yield
    left = helper_pids(session())
    stop_helpers(session())
    assert left == [], f"helper processes outlived their tests: {left}"
