"""Child-process entry: import each module with the checked decorator installed, run every entry.

Reads one JSON job from stdin and streams one JSON event per line on its own copy of stdout
(the user's ``print`` goes to stderr), so a crash or a hang loses only the entry in progress.
Events: ready, fatal, unit, import_error, plan, start, result, unit_done, done.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from cg_lint.codes import CG130
from cg_lint.config import Settings
from cg_lint.findings import Finding

_proto: Any = None


def emit(event: str, **fields: Any) -> None:
    _proto.write(json.dumps({"event": event, **fields}) + "\n")
    _proto.flush()


def _isolate_stdout() -> None:
    """Keep the protocol on a private descriptor; anything else written to stdout goes to stderr."""
    global _proto
    _proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def import_unit(unit: dict[str, Any]) -> ModuleType:
    if unit["sys_path"] and unit["sys_path"] not in sys.path:
        sys.path.insert(0, unit["sys_path"])
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


def main() -> int:
    _isolate_stdout()
    job = json.loads(sys.stdin.readline())
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow  # noqa: F401
    except ImportError as exc:
        emit("fatal", message=f"runtime-check needs TensorFlow (pip install 'cg-lint[runtime]'): {exc}")
        return 2
    from . import checked
    from .exercise import Options
    from .issues import RECORDER

    checked.install()
    emit("ready")
    options = Options(**job["options"])
    skip_ids = set(job["skip_ids"])
    plot_dir = job.get("plot")
    only = job.get("only")  # unit index -> qualnames flagged by the linter, or None
    for index, unit in enumerate(job["units"]):
        if index in job["skip_units"]:
            continue
        emit("unit", unit=index)
        RECORDER.drain()
        try:
            module = import_unit(unit)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt in user code included
            message, line, column = _import_error_line(exc, unit.get("path"))
            emit("import_error", unit=index, message=message, line=line, column=column,
                 path=unit.get("path") or unit["module"])
            continue
        path = unit.get("path") or getattr(module, "__file__", None) or unit["module"]
        try:
            run_unit(index, module, str(path), job, options, skip_ids, only, plot_dir)
        except Exception as exc:  # our bug: say so in one line, keep going with the next unit
            emit("internal_error", unit=index, message=f"{type(exc).__name__}: {exc}",
                 trace=traceback.format_exc(limit=8))
        emit("unit_done", unit=index)
    emit("done")
    return 0


def run_unit(index: int, module: ModuleType, path: str, job: dict[str, Any], options: Any, skip_ids: set[str],
             only: dict[str, list[str]] | None, plot_dir: str | None) -> None:
    from .discover import CannotCall, entries_for, static_definitions
    from .exercise import Exerciser
    from .issues import RECORDER
    from .probes import synthesized
    from .specs import build_input_sets

    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        source = ""
    defs = static_definitions(source, path, Settings(decorators=frozenset(job.get("decorators", ()))))
    functions: dict[str, dict[str, Any]] = job["functions"]
    module_keys = [module.__name__, Path(path).stem]

    def spec_for(qualname: str) -> dict[str, Any] | None:
        for key in module_keys:
            if f"{key}:{qualname}" in functions:
                return functions[f"{key}:{qualname}"]
        return None

    inits = {}
    for key, declared in functions.items():
        mod, _, qualname = key.partition(":")
        if mod in module_keys and declared.get("init"):
            inits[qualname] = declared["init"]
    entries = entries_for(module, path, defs, inits)
    # Issues raised while importing (module-level calls) belong to the module's first entry.
    import_issues, _ = RECORDER.drain()
    if only is not None:
        flagged = set(only.get(str(index), []))
        entries = [e for e in entries if e.qualname in flagged or any(d.qualname in flagged for d in e.definitions)
                   or any(q.split(".<locals>")[0] == e.qualname for q in flagged)]
    static_lines = {d.qualname: d for d in defs}
    emit("plan", unit=index, entries=[
        {"id": f"{index}:{e.qualname}", "qualname": e.location.qualname, "entry": e.qualname,
         "path": e.location.path or path, "line": e.location.line, "column": e.location.column}
        for e in entries
    ])
    for number, entry in enumerate(entries):
        entry_id = f"{index}:{entry.qualname}"
        if entry_id in skip_ids:
            continue
        emit("start", id=entry_id)
        RECORDER.drain()
        used: list[str] = []
        rejected: list[str] = []
        status = "checked"
        spec = spec_for(entry.qualname)
        if entry.problem is not None and not (spec and spec["cases"]):
            status, why = "no-inputs", entry.problem
        else:
            names = entry.names
            sets = build_input_sets(spec["cases"], names) if spec and spec["cases"] else synthesized(names)
            exerciser = Exerciser(entry.make, names, entry.location, options)
            try:
                outcome = exerciser.run(sets)
                used, rejected = outcome.used, outcome.rejected
                why = "; ".join(rejected[:2]) if rejected else "no input was accepted"
            except CannotCall as exc:
                why = str(exc)
            if not used:
                status = "no-inputs"
            elif plot_dir and len(names) == 1:
                _plot(entry, names, exerciser, plot_dir, module.__name__)
        issues, _calls = RECORDER.drain()
        if number == 0:
            issues = import_issues + issues
        findings = [_finding(issue, entry, path, static_lines) for issue in issues]
        if status == "no-inputs":
            source_note = "declared inputs" if spec and spec["cases"] else "probes"
            findings.append(Finding(
                entry.location.path or path, entry.location.line, entry.location.column, CG130,
                f"'{entry.qualname}': no valid inputs found ({source_note}: {why})",
                function=entry.location.qualname,
            ).to_json())
        emit("result", id=entry_id, findings=findings, used=used, status=status,
             rejected=rejected[:3])


def _finding(issue: Any, entry: Any, path: str, static_lines: dict[str, Any]) -> dict[str, Any]:
    info = issue.definition
    line, column, qualname, where = info.line, info.column, info.qualname, info.path
    if where is None or Path(where).resolve() != Path(path).resolve():
        # e.g. the custom gradient TF's recompute_grad builds: report it on the user's function
        line, column, qualname, where = entry.location.line, entry.location.column, entry.location.qualname, path
        message = issue.message.replace(f"'{info.qualname}': ", f"'{qualname}': ", 1)
        message = f"{message} (through the custom gradient '{info.qualname}' it reaches in {info.module})"
    else:
        message = issue.message
        static = static_lines.get(qualname)
        if static is not None:
            line, column = static.line, static.column
    details = issue.mode if not issue.inputs else f"{issue.mode}; inputs {issue.inputs}"
    return Finding(where, line, column, issue.code, f"{message} [{details}]", function=qualname,
                   mode=issue.mode).to_json()


def _plot(entry: Any, names: list[str], exerciser: Any, plot_dir: str, module_name: str) -> None:
    from .plot import plot_entry

    try:
        plot_entry(entry, exerciser, plot_dir, module_name)
    except Exception as exc:  # a plot is a convenience; never fail the check over it
        print(f"runtime-check: could not plot {entry.qualname}: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
