"""Worker process: imports TensorFlow once, then checks the entries the parent sends, one at a time.

Reads a JSON job, then JSON commands (``plan`` a unit, ``run`` an entry, ``exit``) on a private
copy of stdin, and streams one JSON event per line on a private copy of stdout (the user's
``print`` goes to stderr, and the user's ``input()`` reads an empty stdin), so a crash or a hang
loses only the entry in progress. Events: ready, fatal, importing, import_error, plan, start,
result, internal_error, bye. Several workers may import the same module: entries are discovered
the same way in each, and named by unit index and qualname.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import resource
import select
import socket
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from cg_lint.codes import CG130
from cg_lint.config import Settings
from cg_lint.findings import Finding
from cg_lint.processes import die_with_parent

from . import supervisor

_proto: Any = None


def emit(event: str, **fields: Any) -> None:
    _proto.write(json.dumps({"event": event, **fields}) + "\n")
    _proto.flush()


def _isolate_stdio() -> TextIO:
    """Keep the protocol on private descriptors: commands come on a copy of stdin, events go out
    on a copy of stdout. The user's code reads an empty stdin, and its stdout goes to stderr."""
    global _proto
    _proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    commands = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return commands


_OURS = frozenset({"runtime_check", "cg_lint"})


def _own_folder_first(folder: str) -> None:
    """As when the file is run from its folder: that folder first on ``sys.path``, and a top-level
    module an earlier unit imported from another folder (``tools`` of a sibling folder) dropped
    from ``sys.modules`` where this folder holds its own, so the unit imports its own."""
    installed = _installed_prefixes()
    if os.path.realpath(folder).startswith(installed) or os.path.realpath(folder) + os.sep in installed:
        if folder not in sys.path:  # an installed package's folder keeps its place
            sys.path.insert(0, folder)
        return
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    for name, module in list(sys.modules.items()):
        if "." in name or name in _OURS or not _user_module(module, installed):
            continue  # the standard library and installed packages stay: only user modules move
        file = str(module.__file__)
        mine = (os.path.join(folder, name + ".py"), os.path.join(folder, name, "__init__.py"))
        here = next((m for m in mine if os.path.isfile(m)), None)
        if here is not None and os.path.realpath(file) != os.path.realpath(here):
            for sub in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
                del sys.modules[sub]


def _installed_prefixes() -> tuple[str, ...]:
    return tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})


def _user_module(module: object, installed: tuple[str, ...]) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and not os.path.realpath(str(file)).startswith(installed)


def import_unit(unit: dict[str, Any]) -> ModuleType:
    """Import one unit. When the import fails, the user modules it left behind (packages whose
    ``__init__`` ran before a later import failed) are dropped, so the next unit of the same
    package fails as it would alone instead of finding a half-imported package."""
    before = set(sys.modules)
    try:
        return _import_unit(unit)
    except BaseException:
        installed = _installed_prefixes()
        for added in [n for n in sys.modules if n not in before]:
            if _user_module(sys.modules[added], installed) and added.split(".")[0] not in _OURS:
                del sys.modules[added]
        raise


def _import_unit(unit: dict[str, Any]) -> ModuleType:
    if unit["sys_path"]:
        _own_folder_first(unit["sys_path"])
    name, path = unit["module"], unit.get("path")
    if path is None or unit.get("package"):
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_error_line(exc: BaseException, path: str | None) -> tuple[str, int, int]:
    """One line for a failed import, and where to put it (the module's own failing line)."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg}", exc.lineno or 1, exc.offset or 1
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = 1
    if path is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            if os.path.abspath(frame.filename) == os.path.abspath(path) and frame.lineno:
                line = frame.lineno
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__), line, 1


class Worker:
    """Imports units on demand and checks one entry per ``run`` command; keeps TensorFlow warm."""

    def __init__(self, job: dict[str, Any]) -> None:
        from .exercise import Options

        self.units: list[dict[str, Any]] = job["units"]
        self.options = Options(**job["options"])
        self.functions: dict[str, dict[str, Any]] = job["functions"]
        self.only: dict[str, list[str]] | None = job.get("only")  # unit index -> qualnames the linter flags
        self.plot_dir: str | None = job.get("plot")
        self.max_memory: int | None = job.get("max_memory")
        self.decorators: list[str] = job.get("decorators", [])
        self.loaded: dict[int, _Loaded | BaseException] = {}

    def load(self, index: int) -> _Loaded | BaseException:
        """Import unit ``index`` once; an import failure is remembered and returned."""
        if index in self.loaded:
            return self.loaded[index]
        from .issues import RECORDER

        unit = self.units[index]
        RECORDER.drain()
        try:
            module = import_unit(unit)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt in user code included
            self.loaded[index] = exc
            return exc
        path = str(unit.get("path") or getattr(module, "__file__", None) or unit["module"])
        loaded = _Loaded(index, module, path, self.decorators)
        try:
            loaded.discover(self.functions, self.only)
        except Exception as exc:  # our bug: say so in one line, keep going with the next unit
            emit("internal_error", unit=index, message=f"{type(exc).__name__}: {exc}",
                 trace=traceback.format_exc(limit=8))
        self.loaded[index] = loaded
        return loaded

    def plan(self, index: int) -> None:
        emit("importing", unit=index)
        loaded = self.load(index)
        if isinstance(loaded, BaseException):
            unit = self.units[index]
            message, line, column = _import_error_line(loaded, unit.get("path"))
            emit("import_error", unit=index, message=message, line=line, column=column,
                 path=unit.get("path") or unit["module"])
            return
        emit("plan", unit=index, entries=[
            {"id": f"{index}:{e.qualname}", "qualname": e.location.qualname, "entry": e.qualname,
             "path": e.location.path or loaded.path, "line": e.location.line, "column": e.location.column}
            for e in loaded.entries
        ])

    def run(self, index: int, entry_id: str) -> None:
        emit("importing", unit=index, id=entry_id)
        loaded = self.load(index)
        if isinstance(loaded, BaseException):  # imported in another worker, not in this one
            message, _line, _column = _import_error_line(loaded, self.units[index].get("path"))
            emit("result", id=entry_id, status="crash", used=[], rejected=[], findings=[],
                 error=f"importing the module again failed: {message}")
            return
        number, entry = next(((n, e) for n, e in enumerate(loaded.entries)
                              if f"{index}:{e.qualname}" == entry_id), (None, None))
        if entry is None:
            emit("result", id=entry_id, status="crash", used=[], rejected=[], findings=[],
                 error="not found when the module was imported again")
            return
        emit("start", id=entry_id)
        from . import exercise

        # each probe restarts the parent's per-probe clock and names what is running if it hangs
        exercise.PROGRESS = lambda what, entry_id=entry_id: emit("probe", id=entry_id, what=what)
        before = supervisor.descendants(os.getpid())
        try:
            result = check_entry(number or 0, entry, loaded, self.functions, self.options, self.plot_dir)
        except Exception as exc:  # our bug: one line, and the run goes on
            result = {"findings": [], "used": [], "status": "error", "rejected": [],
                      "internal": (f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=8))}
        finally:
            # processes the function started die with it (setsid and double forks included:
            # this worker is their subreaper); those the module's import started live on
            supervisor.kill_tree(os.getpid(), include_root=False, keep=before)
        internal = result.pop("internal", None)
        if internal is not None:
            emit("internal_error", unit=index, message=internal[0], trace=internal[1])
        if self.max_memory and _ran_out_of_memory(result):
            result["status"] = "memory"
        emit("result", id=entry_id, **result)


class _Loaded:
    """An imported unit: its entries, declared specs and the issues its import raised."""

    def __init__(self, index: int, module: ModuleType, path: str, decorators: list[str]) -> None:
        self.index, self.module, self.path, self.decorators = index, module, path, decorators
        self.entries: list[Any] = []
        self.static_lines: dict[str, Any] = {}
        self.import_issues: list[Any] = []
        self.module_keys = [module.__name__, Path(path).stem]
        self.functions: dict[str, dict[str, Any]] = {}

    def discover(self, functions: dict[str, dict[str, Any]], only: dict[str, list[str]] | None) -> None:
        from .discover import entries_for, static_definitions
        from .issues import RECORDER

        self.functions = functions
        try:
            source = Path(self.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            source = ""
        defs = static_definitions(source, self.path, Settings(decorators=frozenset(self.decorators)))
        inits = {}
        for key, spec in functions.items():
            mod, _, qualname = key.partition(":")
            if mod in self.module_keys and spec.get("init"):
                inits[qualname] = spec["init"]
        entries = entries_for(self.module, self.path, defs, inits)
        # Issues raised while importing (module-level calls) belong to the module's first entry.
        self.import_issues, _ = RECORDER.drain()
        if only is not None:
            flagged = set(only.get(str(self.index), []))
            entries = [e for e in entries if e.qualname in flagged or any(d.qualname in flagged for d in e.definitions)
                       or any(q.split(".<locals>")[0] == e.qualname for q in flagged)]
        self.static_lines = {d.qualname: d for d in defs}
        self.entries = entries

    def spec_for(self, qualname: str) -> dict[str, Any] | None:
        for key in self.module_keys:
            if f"{key}:{qualname}" in self.functions:
                return self.functions[f"{key}:{qualname}"]
        return None


_MEMORY_ERRORS = ("MemoryError", "ResourceExhaustedError", "std::bad_alloc", "Cannot allocate memory")


def _ran_out_of_memory(result: dict[str, Any]) -> bool:
    """Under a memory cap, an allocation the cap refused is not a rejected input."""
    texts = list(result.get("rejected", [])) + [f["message"] for f in result.get("findings", [])]
    return any(marker in text for text in texts for marker in _MEMORY_ERRORS)


def _limit_memory(max_memory: int) -> None:
    """Refuse allocations well past the cap at once (the parent polls resident memory for the cap
    itself): virtual size now, plus the cap, plus room for the thread pools TensorFlow starts later."""
    current = supervisor.virtual_size()
    if current is None:
        return
    limit = current + max_memory + (2 << 30)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> int:
    if sys.argv[1:] == ["--zygote"]:
        return zygote_main()
    commands = _isolate_stdio()
    supervisor.become_subreaper()
    die_with_parent()
    if os.getppid() != int(os.environ.get("RUNTIME_CHECK_PARENT", os.getppid())):
        return 1  # the parent died before we asked to die with it
    job = json.loads(commands.readline())
    if not _import_tensorflow():
        _exit(2)
    serve(job, commands)
    return 0


def _import_tensorflow() -> bool:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow  # noqa: F401
    except ImportError as exc:
        emit("fatal", message=f"runtime-check needs TensorFlow (the 'runtime' extra; pip install tensorflow): {exc}")
        return False
    from . import checked

    checked.install()
    return True


def serve(job: dict[str, Any], commands: TextIO) -> None:
    """The worker's loop, TensorFlow imported: one command at a time until ``exit``."""
    worker = Worker(job)
    if worker.max_memory:
        _limit_memory(worker.max_memory)
    emit("ready", pid=os.getpid())
    for line in commands:
        command = json.loads(line)
        if command["cmd"] == "plan":
            worker.plan(command["unit"])
        elif command["cmd"] == "run":
            worker.run(command["unit"], command["id"])
        elif command["cmd"] == "exit":
            break
    _exit(0)


def zygote_main() -> int:
    """Import TensorFlow once, then fork a worker for each request (three descriptors: its
    commands, its events, its stderr), so a new worker costs a fork, not an import.

    Forking is safe only before TensorFlow runs its first op (its thread pools do not survive a
    fork), so the zygote itself never runs one: it imports and installs the checked decorator. It
    reports each fork's pid and reaps each worker, reporting its exit status."""
    channel = socket.socket(fileno=int(os.environ.pop("RUNTIME_CHECK_ZYGOTE_FD")))
    _isolate_stdio().close()
    die_with_parent()
    if os.getppid() != int(os.environ.get("RUNTIME_CHECK_PARENT", os.getppid())):
        return 1
    if not _import_tensorflow():
        os._exit(2)
    emit("ready", pid=os.getpid())
    while True:
        readable, _, _ = select.select([channel], [], [], 0.05)
        _reap_workers()
        if not readable:
            continue
        try:
            message, fds, _flags, _address = socket.recv_fds(channel, 65536, 3)
        except OSError:
            message, fds = b"", []
        if not message:  # the parent closed its end: it is done, or gone
            os._exit(0)
        request = json.loads(message.decode("utf-8").splitlines()[0])
        pid = os.fork()
        if pid == 0:
            channel.close()
            _become_worker(fds)
        for fd in fds:
            os.close(fd)
        emit("forked", id=request["id"], pid=pid)


def _reap_workers() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        emit("exited", pid=pid, returncode=os.waitstatus_to_exitcode(status))


def _become_worker(fds: list[int]) -> None:
    """In the forked child: its own session, its own descriptors, then the worker's loop."""
    try:
        os.setsid()
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        _proto.close()  # the zygote's event stream is not this worker's
        sys.argv[1:] = []  # what a spawned worker's code sees; not the zygote's flag
        commands = _isolate_stdio()
        supervisor.become_subreaper()
        die_with_parent()  # the zygote, which dies with runtime-check
        serve(json.loads(commands.readline()), commands)
    finally:
        os._exit(70)


def _exit(status: int) -> None:
    """Leave now: kill what the checked modules started, and do not wait for their non-daemon
    threads or atexit handlers (a thread started at import must not keep the run waiting)."""
    supervisor.kill_tree(os.getpid(), include_root=False)
    try:
        emit("bye")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(status)


def check_entry(number: int, entry: Any, loaded: _Loaded, functions: dict[str, dict[str, Any]], options: Any,
                plot_dir: str | None) -> dict[str, Any]:
    from .discover import CannotCall
    from .exercise import Exerciser
    from .inputs.plan import input_sets
    from .issues import RECORDER
    from .suppress import keep

    path, module, static_lines = loaded.path, loaded.module, loaded.static_lines
    import_issues = loaded.import_issues
    RECORDER.drain()
    used: list[str] = []
    rejected: list[str] = []
    status = "checked"
    internal: tuple[str, str] | None = None
    spec = loaded.spec_for(entry.qualname)
    if entry.problem is not None and not (spec and spec["cases"]):
        status, why = "no-inputs", entry.problem
    else:
        names = entry.names
        exerciser = Exerciser(entry.make, names, entry.location, options)
        try:
            sets, why = input_sets(entry, names, spec, path)
            outcome = exerciser.run(sets)
            used, rejected = outcome.used, outcome.rejected
            why = why or ("; ".join(rejected[:2]) if rejected else "no input was accepted")
        except CannotCall as exc:
            why = str(exc)
        except Exception as exc:  # our bug: keep what was found before it, and never call the entry ok
            internal = (f"{type(exc).__name__}: {exc}", traceback.format_exc(limit=8))
            used, status = list(exerciser.outcome.used), "error"
        if not used and status != "error":
            status = "no-inputs"
        elif plot_dir:
            _plot(entry, names, exerciser, plot_dir, module.__name__)
    issues, calls = RECORDER.drain()
    if number == 0:
        issues = import_issues + issues
    findings = [_finding(issue, entry, path, static_lines) for issue in issues]
    if status == "no-inputs":
        source_note = "declared inputs" if spec and spec["cases"] else "searched without configuration"
        findings.append(Finding(
            entry.location.path or path, entry.location.line, entry.location.column, CG130,
            f"'{entry.qualname}': no valid inputs found ({source_note}: {why})",
            function=entry.location.qualname,
        ).to_json())
    ignored = [*(spec or {}).get("ignore", []), *(loaded.spec_for(entry.location.qualname) or {}).get("ignore", [])]
    findings = keep(findings, path, ignored)
    result = {"findings": findings, "used": used, "status": status, "rejected": rejected[:3],
              "called": sorted({f"{c.path}:{c.qualname}" for c in calls})}
    if internal is not None:
        result["internal"] = internal
    return result


def _finding(issue: Any, entry: Any, path: str, static_lines: dict[str, Any]) -> dict[str, Any]:
    info = issue.definition
    line, column, qualname, where = info.line, info.column, info.qualname, info.path
    if where is None or Path(where).resolve() != Path(path).resolve():
        # e.g. the custom gradient TF's recompute_grad builds: report it on the user's function
        line, column, qualname, where = entry.location.line, entry.location.column, entry.location.qualname, path
        message = issue.message.replace(f"'{info.qualname}': ", f"'{qualname}': ", 1)
        message = f"{message} (through the custom gradient '{info.qualname}' it reaches in {info.module})"
        message += issue.via_note(besides=qualname)
    else:
        message = issue.message + issue.via_note()
        static = static_lines.get(qualname)
        if static is not None:
            line, column = static.line, static.column
    return Finding(where, line, column, issue.code, f"{message} [{issue.details()}]", function=qualname,
                   mode=issue.mode, inputs=issue.inputs or None,
                   origin=(issue.origin or None) if issue.inputs else None).to_json()


def _plot(entry: Any, names: list[str], exerciser: Any, plot_dir: str, module_name: str) -> None:
    from .plot import plot_entry

    try:
        plot_entry(entry, exerciser, plot_dir, module_name)
    except Exception as exc:  # a plot is a convenience; never fail the check over it
        print(f"runtime-check: could not plot {entry.qualname}: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
