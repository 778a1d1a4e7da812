"""Parent side: run the worker in a child process, with a per-function timeout and crash isolation.

When the child hangs (timeout) or dies (abort, segfault), the function in progress is reported
(CG120/CG121), a new child is started, and it continues with the next function: every other
function's results are still reported.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

from .targets import Unit

IMPORT_TIMEOUT = 120.0  # importing TensorFlow and a module; generous on slow CI machines


@dataclass
class EntryResult:
    id: str
    qualname: str
    path: str
    line: int
    column: int
    status: str = "pending"  # checked | no-inputs | timeout | crash
    used: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunResult:
    entries: dict[str, EntryResult] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)  # module-level (CG122)
    errors: list[str] = field(default_factory=list)  # internal errors, one line each


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.total = 0
        self.done = 0

    def show(self, current: str) -> None:
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / self.total) if self.total else 0
        text = f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {current}"[:100]
        sys.stderr.write(text.ljust(100))
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()


def _signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "unknown status"
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class _Child:
    def __init__(self, job: dict[str, Any], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runtime_check.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, start_new_session=True, text=True, encoding="utf-8", errors="replace",
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=40)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.close()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line.rstrip("\n"))

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the child and anything it started
        self.process.wait()


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("PYTHONUNBUFFERED", "1")
    # The worker must import this runtime_check, wherever the parent found it.
    here = Path(__file__).resolve().parent.parent
    if here.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(here), env.get("PYTHONPATH", "")) if p)
    return env


def run(units: list[Unit], options: dict[str, Any], functions: dict[str, Any], timeout: float,
        only: dict[str, list[str]] | None = None, plot: str | None = None,
        progress: Progress | None = None, on_result: Callable[[EntryResult], None] | None = None,
        decorators: frozenset[str] = frozenset()) -> RunResult:
    """``decorators``: the project's own names for custom_gradient (``[tool.cg_lint]``)."""
    progress = progress or Progress(False)
    result = RunResult()
    skip_ids: set[str] = set()
    finished_units: set[int] = set()
    env = child_env()
    while len(finished_units) < len(units):
        job = {
            "units": [u.to_json() for u in units], "skip_units": sorted(finished_units),
            "skip_ids": sorted(skip_ids), "options": options, "functions": functions,
            "only": only, "plot": plot, "decorators": sorted(decorators),
        }
        child = _Child(job, env)
        current_unit: int | None = None
        current_id: str | None = None
        deadline = time.monotonic() + IMPORT_TIMEOUT
        ended = False
        while not ended:
            lost: tuple[str, str, str, str, str] | None = None  # how the child was lost, if it was
            try:
                line = child.lines.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                if time.monotonic() < deadline:
                    continue
                child.kill()
                lost = ("timeout", "CG120", f"did not finish within {timeout:g} s (timed out; the process was stopped)",
                        f"did not finish within {IMPORT_TIMEOUT:g} s",
                        f"the checker process did not start within {IMPORT_TIMEOUT:g} s")
            else:
                if line is None:  # the child exited
                    how = _signal_name(child.process.wait())
                    tail = next((ln for ln in reversed(child.stderr) if ln.strip()), "")
                    lost = ("crash", "CG121", f"crashed the process ({how})", f"crashed the process ({how})",
                            f"the checker process exited early ({how}): {tail}")
            if lost is not None:
                # blame what was running: a function, else the import of a module, else the start
                status, code, function_message, import_message, start_message = lost
                if current_id is not None:
                    _fail_entry(result, current_id, status, code, function_message)
                    skip_ids.add(current_id)
                    progress.done += 1
                elif current_unit is not None:
                    _module_finding(result, units[current_unit], "CG122",
                                    f"importing module '{units[current_unit].module}' {import_message}")
                    finished_units.add(current_unit)
                else:
                    result.errors.append(f"runtime-check: error: {start_message}")
                    return result
                break
            try:
                event = json.loads(line)  # type: ignore[arg-type]  # None (the child exited) ended the loop above
            except json.JSONDecodeError:
                continue
            kind = event["event"]
            if kind == "fatal":
                result.errors.append(f"runtime-check: error: {event['message']}")
                child.kill()
                return result
            if kind in ("ready", "unit"):
                current_unit = event.get("unit")
                deadline = time.monotonic() + IMPORT_TIMEOUT
            elif kind == "import_error":
                unit = units[event["unit"]]
                _module_finding(result, unit, "CG122",
                                f"cannot import module '{unit.module}': {event['message']}",
                                event.get("line", 1), event.get("column", 1))
                finished_units.add(event["unit"])
                current_unit = None
            elif kind == "plan":
                for item in event["entries"]:
                    if item["id"] not in result.entries:
                        result.entries[item["id"]] = EntryResult(item["id"], item["qualname"], item["path"],
                                                                 item["line"], item["column"])
                        progress.total += 1
                progress.show("")
            elif kind == "start":
                current_id = event["id"]
                deadline = time.monotonic() + timeout
                progress.show(result.entries[current_id].qualname)
            elif kind == "result":
                entry = result.entries[event["id"]]
                entry.status, entry.used, entry.findings = event["status"], event["used"], event["findings"]
                skip_ids.add(event["id"])
                current_id = None
                progress.done += 1
                progress.show(entry.qualname)
                deadline = time.monotonic() + timeout
                if on_result is not None:
                    on_result(entry)
            elif kind == "internal_error":
                result.errors.append(f"runtime-check: internal error in {units[event['unit']].display}: "
                                     f"{event['message']}")
                if os.environ.get("RUNTIME_CHECK_DEBUG"):
                    sys.stderr.write(event.get("trace", ""))
            elif kind == "unit_done":
                finished_units.add(event["unit"])
                current_unit = None
                deadline = time.monotonic() + IMPORT_TIMEOUT
            elif kind == "done":
                child.process.wait()
                ended = True
                finished_units.update(range(len(units)))
    progress.close()
    return result


def _fail_entry(result: RunResult, entry_id: str, status: str, code: str, what: str) -> None:
    entry = result.entries[entry_id]
    entry.status = status
    entry.findings.append({
        "path": entry.path, "line": entry.line, "column": entry.column, "code": code,
        "function": entry.qualname, "mode": None, "message": f"'{entry.qualname}' {what}",
    })


def _module_finding(result: RunResult, unit: Unit, code: str, message: str, line: int = 1, column: int = 1) -> None:
    result.findings.append({
        "path": unit.path or unit.module, "line": line, "column": column, "code": code,
        "function": None, "mode": None, "message": message,
    })
