"""Parent side: a pool of warm worker processes, each fed one function at a time, supervised.

Workers import TensorFlow once and check many functions each; ``jobs`` of them run in parallel.
A worker that hangs (timeout), dies (abort, segfault) or outgrows the memory cap is killed with
its whole process tree, the function in progress is reported (CG120/CG121/CG123), a new worker
takes the remaining functions, and every other function's results are still reported.
Ctrl-C, SIGTERM and SIGHUP stop the run: every worker and whatever it started is killed, and the
results so far are returned (``RunResult.interrupted`` names the signal). See ``supervisor``
for how processes that escaped their group (``setsid``, double forks) are found.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cg_lint.findings import Finding

from . import supervisor
from .targets import Unit

START_TIMEOUT = 120.0  # a worker importing TensorFlow; generous on slow CI machines
EXIT_GRACE = 5.0  # how long a worker may take to exit after its last result
MEMORY_POLL = 0.1  # seconds between two reads of the workers' resident memory
STDERR_TAIL = 8192  # bytes of a worker's stderr kept to explain a crash


@dataclass
class EntryResult:
    id: str
    qualname: str
    path: str
    line: int
    column: int
    status: str = "pending"  # checked | no-inputs | timeout | crash | memory | error
    used: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    called: list[str] = field(default_factory=list)  # "path:qualname" of each custom gradient reached


@dataclass
class RunResult:
    entries: dict[str, EntryResult] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)  # module-level (CG122)
    errors: list[str] = field(default_factory=list)  # internal errors, one line each
    interrupted: str | None = None  # the signal that stopped the run early


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
        text = f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {current}"[
            :100
        ]
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


class Interrupted(BaseException):
    """SIGTERM or SIGHUP: stop the run as Ctrl-C does."""


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)


class _ForkedProcess:
    """A worker the zygote forked, behind the part of Popen's interface the runner uses; its pid
    and exit status arrive from the zygote (its parent)."""

    def __init__(self, stdin: Any, stdout: Any, stderr: Any) -> None:
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.pid: int | None = None
        self.returncode: int | None = None
        self.ended = threading.Event()

    def poll(self) -> int | None:
        return self.returncode if self.ended.is_set() else None

    def wait(self, timeout: float | None = None) -> int | None:
        # without a timeout, a bounded wait: the zygote may be gone and never report the status
        if not self.ended.wait(EXIT_GRACE if timeout is None else timeout) and timeout is not None:
            raise subprocess.TimeoutExpired("runtime_check.worker", timeout)
        return self.returncode


class _Zygote:
    """Imports TensorFlow once and forks workers on request (``worker.zygote_main``)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.channel, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runtime_check.worker", "--zygote"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**env, "RUNTIME_CHECK_ZYGOTE_FD": str(theirs.fileno())},
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        self.pid = self.process.pid
        self.requests = 0
        self.pending: dict[int, _ForkedProcess] = {}
        self.children: dict[int, _ForkedProcess] = {}
        self.lock = threading.Lock()
        self.fatal: str | None = None
        self.stderr_tail = b""
        self.gone = threading.Event()
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_events(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            try:
                event = json.loads(raw)
            except json.JSONDecodeError:
                continue
            with self.lock:
                if event["event"] == "forked":
                    child = self.pending.pop(event["id"])
                    child.pid = event["pid"]
                    self.children[child.pid] = child
                elif event["event"] == "exited" and event["pid"] in self.children:
                    child = self.children.pop(event["pid"])
                    child.returncode = event["returncode"]
                    child.ended.set()
                elif event["event"] == "fatal":
                    self.fatal = event["message"]
        self.gone.set()
        with self.lock:  # its workers die with it (parent-death signal); nobody will report them
            for child in [*self.pending.values(), *self.children.values()]:
                child.ended.set()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := _read_chunk(self.process.stderr.fileno()):
            self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    def fork(self) -> _ForkedProcess:
        """A new worker: its commands, events and stderr travel on pipes handed over the channel."""
        commands_read, commands_write = os.pipe()
        events_read, events_write = os.pipe()
        errors_read, errors_write = os.pipe()
        child = _ForkedProcess(
            os.fdopen(commands_write, "wb"),
            os.fdopen(events_read, "rb"),
            os.fdopen(errors_read, "rb"),
        )
        with self.lock:
            self.requests += 1
            self.pending[self.requests] = child
            request = self.requests
        try:
            socket.send_fds(
                self.channel,
                [json.dumps({"id": request}).encode() + b"\n"],
                [commands_read, events_write, errors_write],
            )
        except OSError:
            pass  # the zygote is gone: the worker's events end at once, and the loop says why
        finally:
            for fd in (commands_read, events_write, errors_write):
                os.close(fd)
        return child

    def close(self, grace: float = EXIT_GRACE) -> None:
        with contextlib.suppress(OSError):
            self.channel.close()  # the zygote exits when its channel ends
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace)
        supervisor.kill_tree(self.pid)
        self.process.wait()


def _read_chunk(descriptor: int) -> bytes:
    try:
        return os.read(descriptor, 65536)
    except OSError:
        return b""


class _Worker:
    """One worker process, its reader threads and what it is doing."""

    def __init__(
        self,
        number: int,
        job: dict[str, Any],
        env: dict[str, str],
        events: queue.Queue[tuple[_Worker, str | None]],
        zygote: _Zygote | None = None,
    ) -> None:
        self.number = number
        self.process: Any
        if zygote is not None:
            self.process = zygote.fork()
        else:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "runtime_check.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own session and process group
            )
        self.events = events
        self.stderr_tail = b""
        self.ready = False
        self.dead = False
        self.exiting = False
        self.task: tuple[str, int | None, str | None] | None = ("start", None, None)
        self.deadline = time.monotonic() + START_TIMEOUT
        # the probe in progress (what, since) and how many finished: the timeout is per probe, so a
        # slow function is not taken for a stuck one, and a stuck one says where it stopped
        self.probe: tuple[str, float] | None = None
        self.probes_done = 0
        self.entry_started = time.monotonic()
        threading.Thread(target=self._read_events, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.send(job)

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def _read_events(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.events.put((self, raw.decode("utf-8", "replace")))
        self.events.put((self, None))

    def _read_stderr(self) -> None:
        # chunks, not lines: a module may print gigabytes without a newline
        assert self.process.stderr is not None
        while chunk := _read_chunk(self.process.stderr.fileno()):
            self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    def last_stderr_line(self) -> str:
        text = self.stderr_tail.decode("utf-8", "replace")
        return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")[:300]

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it died: its stdout ends and the loop blames the task in progress

    def give(self, task: tuple[str, int | None, str | None], timeout: float) -> None:
        kind, unit, entry_id = task
        self.task = task
        self.deadline = time.monotonic() + timeout
        self.send({"cmd": kind, "unit": unit, "id": entry_id})

    def ask_to_exit(self) -> None:
        self.exiting = True
        self.task = ("exit", None, None)
        self.deadline = time.monotonic() + EXIT_GRACE
        self.send({"cmd": "exit"})
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    def kill(self) -> int | None:
        """Kill the worker, its group and every descendant; return its exit status."""
        self.dead = True
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.close()  # a worker forked late reads EOF and leaves
        if self.pid is None:  # not forked yet (the zygote kills it, if it ever is, when closed)
            return None
        supervisor.kill_tree(self.pid)
        return self.process.wait()


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env.setdefault("PYTHONUNBUFFERED", "1")
    # The worker must import this runtime_check, wherever the parent found it.
    here = Path(__file__).resolve().parent.parent
    if here.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(here), env.get("PYTHONPATH", "")) if p)
    return env


def _estimate_functions(units: list[Unit]) -> int:
    """How many functions there may be, to start no more workers than there is work for."""
    total = 0
    for unit in units:
        if unit.path is None:
            return 1 << 20  # a module name: unknown until imported
        try:
            with open(unit.path, encoding="utf-8", errors="replace") as handle:
                total += max(
                    1, handle.read().count("custom_gradient") - 1
                )  # minus the import, roughly
        except OSError:
            total += 1
    return total


def use_zygote() -> bool:
    """Fork workers from one TensorFlow import (Linux), unless RUNTIME_CHECK_SPAWN=1 asks for a
    fresh interpreter per worker."""
    return (
        sys.platform.startswith("linux")
        and hasattr(socket, "send_fds")
        and os.environ.get("RUNTIME_CHECK_SPAWN") != "1"
    )


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _Run:
    """The scheduler: hands plans (import a module, list its entries) and entries to workers."""

    def __init__(
        self,
        units: list[Unit],
        job: dict[str, Any],
        timeout: float,
        jobs: int,
        max_memory: int | None,
        progress: Progress,
        on_result: Callable[[EntryResult], None] | None,
    ) -> None:
        self.units, self.job, self.timeout = units, job, timeout
        self.max_memory, self.progress, self.on_result = max_memory, progress, on_result
        self.result = RunResult()
        self.env = child_env()
        self.env["RUNTIME_CHECK_PARENT"] = str(os.getpid())
        self.events: queue.Queue[tuple[_Worker, str | None]] = queue.Queue()
        self.workers: list[_Worker] = []
        self.to_plan: deque[int] = deque(range(len(units)))
        self.to_run: deque[tuple[int, str]] = deque()
        self.started = 0
        self.start_failures = 0
        self.ever_ready = False
        self.capacity = max(1, min(jobs, _estimate_functions(units)))
        self.preexisting = supervisor.orphans(())  # children the caller had before this run
        self.zygote: _Zygote | None = None

    # -- workers -------------------------------------------------------------------------------
    def live(self) -> list[_Worker]:
        return [w for w in self.workers if not w.dead]

    def busy(self) -> bool:
        return any(w.task is not None and w.task[0] in ("plan", "run") for w in self.live())

    def remaining(self) -> int:
        return len(self.to_plan) + len(self.to_run)

    def spawn_if_needed(self) -> None:
        live = [w for w in self.live() if not w.exiting]
        idle = sum(1 for w in live if w.task is None or w.task[0] == "start")
        wanted = min(self.capacity, len(live) + max(0, self.remaining() - idle))
        while len(live) < wanted:
            live.append(self.new_worker())

    def new_worker(self) -> _Worker:
        worker = _Worker(self.started, self.job, self.env, self.events, self.zygote)
        self.started += 1
        self.workers.append(worker)
        return worker

    def keep(self) -> list[int]:
        """Our children that are not leftovers: live workers, the zygote, the caller's."""
        pids = [w.pid for w in self.live() if w.pid is not None] + list(self.preexisting)
        return pids + ([self.zygote.pid] if self.zygote is not None else [])

    def bury(self, worker: _Worker, kill: bool = True) -> str:
        """Make sure ``worker`` and all it started are gone; say how it ended."""
        status = worker.kill() if kill or worker.process.poll() is None else worker.process.wait()
        worker.dead = True
        supervisor.sweep_orphans(self.keep())
        return _signal_name(status)

    def shutdown(self) -> None:
        """Ask every worker to exit, give each EXIT_GRACE, then kill what is left (always)."""
        for worker in self.live():
            if not worker.exiting:
                worker.ask_to_exit()
        end = time.monotonic() + EXIT_GRACE
        for worker in self.live():
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.process.wait(timeout=max(0.0, end - time.monotonic()))
            self.bury(worker)
        self.close_zygote()

    def close_zygote(self, grace: float = EXIT_GRACE) -> None:
        if self.zygote is not None:
            self.zygote.close(grace)
            self.zygote = None

    # -- the loop ------------------------------------------------------------------------------
    def assign(self, worker: _Worker) -> None:
        if not worker.ready or worker.dead or worker.exiting:
            return
        if self.to_plan:
            worker.give(("plan", self.to_plan.popleft(), None), self.timeout)
        elif self.to_run:
            unit, entry_id = self.to_run.popleft()
            worker.give(("run", unit, entry_id), self.timeout)
        else:
            worker.task = None

    def loop(self) -> None:
        if use_zygote():
            self.zygote = _Zygote(self.env)
        for _ in range(self.capacity):  # all at once (forks of one import, or overlapping imports)
            self.new_worker()
        next_poll = time.monotonic() + MEMORY_POLL
        while (self.remaining() or self.busy()) and not self.fatal:
            now = time.monotonic()
            waits = [w.deadline for w in self.live() if w.task is not None]
            if self.max_memory:
                waits.append(next_poll)
            wait = max(0.01, min(min(waits, default=now + 1.0) - now, 1.0))
            pending: list[tuple[_Worker, str | None]] = []
            try:
                pending.append(self.events.get(timeout=wait))
                while True:  # everything that arrived: a result in the queue beats its deadline
                    pending.append(self.events.get_nowait())
            except queue.Empty:
                pass
            for worker, line in pending:
                if worker.dead:
                    continue  # stopped already; its last words do not count
                if line is None:
                    self.lost(worker, "crash", self.bury(worker, kill=False))
                else:
                    self.handle(worker, line)
            for gone in [w for w in self.live() if w.process.poll() is not None]:
                # dead although its stdout is still open (a process it forked holds the pipe)
                self.lost(gone, "crash", self.bury(gone, kill=False))
            now = time.monotonic()
            for stuck in [w for w in self.live() if w.task is not None and now >= w.deadline]:
                self.bury(stuck)
                self.lost(stuck, "timeout", "")
            if self.max_memory and now >= next_poll:
                next_poll = now + MEMORY_POLL
                for big in [
                    w for w in self.live() if w.task is not None and w.task[0] in ("plan", "run")
                ]:
                    if big.pid is not None and supervisor.tree_rss(big.pid) > self.max_memory:
                        self.bury(big)
                        self.lost(big, "memory", "")
            if self.fatal:
                return
            self.spawn_if_needed()
            for idle in self.live():
                if idle.ready and idle.task is None:
                    self.assign(idle)

    fatal = False

    def handle(self, worker: _Worker, line: str) -> None:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return
        kind = event["event"]
        result = self.result
        if kind == "fatal":
            if not self.fatal:  # every worker that cannot import TensorFlow says so: once is enough
                result.errors.append(f"runtime-check: error: {event['message']}")
            self.fatal = True
        elif kind == "ready":
            worker.ready = self.ever_ready = True
            worker.task = None
            self.assign(worker)
        elif kind in ("importing", "start"):
            worker.deadline = time.monotonic() + self.timeout
            if kind == "start":
                worker.probe, worker.probes_done, worker.entry_started = None, 0, time.monotonic()
                self.progress.show(result.entries[event["id"]].qualname)
        elif kind == "probe":
            worker.probes_done += worker.probe is not None
            worker.probe = (event["what"], time.monotonic())
            worker.deadline = time.monotonic() + self.timeout
        elif kind == "import_error":
            unit = self.units[event["unit"]]
            _module_finding(
                result,
                unit,
                "CG122",
                f"cannot import module '{unit.module}': {event['message']}",
                event.get("line", 1),
                event.get("column", 1),
            )
            self.assign(worker)
        elif kind == "plan":
            for item in event["entries"]:
                if item["id"] not in result.entries:
                    result.entries[item["id"]] = EntryResult(
                        item["id"], item["qualname"], item["path"], item["line"], item["column"]
                    )
                    self.to_run.append((event["unit"], item["id"]))
                    self.progress.total += 1
            self.progress.show("")
            self.assign(worker)
        elif kind == "result":
            entry = result.entries[event["id"]]
            entry.status, entry.used, entry.findings = (
                event["status"],
                event["used"],
                event["findings"],
            )
            entry.called = event.get("called", [])
            if entry.status == "memory":
                entry.findings = [f for f in entry.findings if f["code"] != "CG130"]
                _fail_entry(result, entry.id, "memory", "CG123", self._memory_message())
            elif event.get("error"):
                _fail_entry(result, entry.id, "crash", "CG121", event["error"])
            self.finished(entry)
            self.assign(worker)
        elif kind == "internal_error":
            result.errors.append(
                f"runtime-check: internal error in {self.units[event['unit']].display}: "
                f"{event['message']}"
            )
            if os.environ.get("RUNTIME_CHECK_DEBUG"):
                sys.stderr.write(event.get("trace", ""))

    def _memory_message(self) -> str:
        cap = supervisor.format_size(self.max_memory or 0)
        return f"used more memory than the cap of {cap} (--max-memory; the process was stopped)"

    def finished(self, entry: EntryResult) -> None:
        self.progress.done += 1
        self.progress.show(entry.qualname)
        if self.on_result is not None:
            self.on_result(entry)

    def lost(self, worker: _Worker, how: str, status: str) -> None:
        """Blame what ``worker`` was doing when it died, timed out or outgrew the memory cap."""
        task = worker.task
        worker.task = None
        if task is None or task[0] == "exit":
            return
        kind, unit_index, entry_id = task
        if kind == "start":
            if how == "timeout":
                message = f"a checker process did not start within {START_TIMEOUT:g} s"
            else:
                message = f"a checker process exited early ({status}): {worker.last_stderr_line()}"
            zygote = self.zygote
            if zygote is not None and (not self.ever_ready or zygote.process.poll() is not None):
                zygote.gone.wait(EXIT_GRACE)  # the workers' parent: it says why, if it died
                if zygote.fatal:
                    message = zygote.fatal
                elif zygote.gone.is_set():
                    tail = zygote.stderr_tail.decode("utf-8", "replace").strip().splitlines()
                    message = (
                        f"the checker process exited early ({_signal_name(zygote.process.poll())})"
                        f"{': ' + tail[-1][:300] if tail else ''}"
                    )
            self.start_failures += 1
            if not self.ever_ready or self.start_failures > 3:
                if not self.fatal:  # one line, however many workers failed to start
                    self.result.errors.append(f"runtime-check: error: {message}")
                self.fatal = True
            return
        if kind == "run" and entry_id is not None:
            probe = worker.probe
            stuck = " (timed out; the process was stopped)" if probe is None else (
                f": stuck in the {probe[0]} for {self.timeout:g} s ({worker.probes_done} earlier "
                f"probe(s) finished in {probe[1] - worker.entry_started:.1f} s; the process was stopped)")
            code, what = {
                "timeout": ("CG120", f"did not finish within {self.timeout:g} s{stuck}"),
                "memory": ("CG123", self._memory_message()),
            }.get(how, ("CG121", f"crashed the process ({status})"))
            _fail_entry(
                self.result,
                entry_id,
                {"CG120": "timeout", "CG123": "memory"}.get(code, "crash"),
                code,
                what,
            )
            self.finished(self.result.entries[entry_id])
            return
        assert unit_index is not None
        unit = self.units[unit_index]
        what = {
            "timeout": f"did not finish within {self.timeout:g} s (the process was stopped)",
            "memory": self._memory_message(),
        }.get(how, f"crashed the process ({status})")
        _module_finding(self.result, unit, "CG122", f"importing module '{unit.module}' {what}")


def run(
    units: list[Unit],
    options: dict[str, Any],
    functions: dict[str, Any],
    timeout: float,
    only: dict[str, list[str]] | None = None,
    plot: str | None = None,
    progress: Progress | None = None,
    on_result: Callable[[EntryResult], None] | None = None,
    decorators: frozenset[str] = frozenset(),
    jobs: int | None = None,
    max_memory: int | None = None,
) -> RunResult:
    """Check every function of ``units`` in up to ``jobs`` workers; always leaves no process behind.

    ``decorators``: the project's own names for custom_gradient (``[tool.cg_lint]``)."""
    supervisor.become_subreaper()
    job = {
        "units": [u.to_json() for u in units],
        "options": options,
        "functions": functions,
        "only": only,
        "plot": plot,
        "max_memory": max_memory,
        "decorators": sorted(decorators),
    }
    state = _Run(
        units,
        job,
        timeout,
        jobs or default_jobs(),
        max_memory,
        progress or Progress(False),
        on_result,
    )
    handlers: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            handlers[sig] = signal.signal(sig, _raise_interrupted)
    try:
        state.loop()
    except KeyboardInterrupt:
        state.result.interrupted = "SIGINT"
    except Interrupted as exc:
        state.result.interrupted = str(exc)
    finally:
        # a second Ctrl-C must not cut the cleanup short
        blocked: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                blocked[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            if state.result.interrupted:
                for worker in state.live():
                    state.bury(worker)
                state.close_zygote(grace=0)
            else:
                state.shutdown()
            supervisor.sweep_orphans(state.preexisting)
        finally:
            for sig, previous in {**blocked, **handlers}.items():  # as the caller had them
                signal.signal(sig, previous)
        state.progress.close()
    return state.result


def _fail_entry(result: RunResult, entry_id: str, status: str, code: str, what: str) -> None:
    entry = result.entries[entry_id]
    entry.status = status
    entry.findings.append(Finding(entry.path, entry.line, entry.column, code, f"'{entry.qualname}' {what}",
                                  function=entry.qualname).to_json())


def _module_finding(
    result: RunResult, unit: Unit, code: str, message: str, line: int = 1, column: int = 1
) -> None:
    result.findings.append(Finding(unit.path or unit.module, line, column, code, message).to_json())
