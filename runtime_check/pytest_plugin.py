"""pytest plugin: check every custom-gradient call the test suite makes.

``pytest --cg-runtime-check [paths]`` turns it on (a plain flag: it never takes a path as its
value); ``--cg-runtime-check-mode=warn`` (or the ini key ``cg_runtime_check_mode = warn``) only
reports, ``fail`` (the default) fails the run on findings. The ini key ``cg_runtime_check = true``
turns it on without the flag. The checked decorator is installed at ``pytest_configure``, before
test modules are imported, so functions decorated at import (or later, at call time) are wrapped.
Each eager call is also re-run once per (definition, input signature), eagerly and traced with
``tf.function``, and the gradients compared; functions made by one shared wrapper are distinct
definitions (see ``issues.definition_identity``).

Under pytest-xdist each worker checks the calls its tests make and hands its findings to the
controller in ``workeroutput``; the controller merges them, prints the summary and fails the run.

This module must stay cheap to import: it is loaded for every pytest run once the package is
installed, and TensorFlow is imported only when the option is given (never in an xdist controller).
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

import pytest

_STATE_KEY = "_cg_runtime_check_state"
_OUTPUT_KEY = "cg_runtime_check"
MODES = ("fail", "warn")


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("cg-runtime-check", "custom-gradient runtime checks")
    group.addoption(
        "--cg-runtime-check",
        action="store_true",
        default=False,
        dest="cg_runtime_check",
        help="check every tf.custom_gradient call eagerly and under tf.function (needs TensorFlow)",
    )
    group.addoption(
        "--cg-runtime-check-mode",
        default=None,
        choices=MODES,
        dest="cg_runtime_check_mode",
        help="fail: findings fail the run (default); warn: findings are only reported",
    )
    parser.addini(
        "cg_runtime_check",
        type="bool",
        default=False,
        help="turn the custom-gradient runtime check on, as --cg-runtime-check does",
    )
    parser.addini(
        "cg_runtime_check_mode",
        default="fail",
        help="fail (default) or warn, as --cg-runtime-check-mode",
    )


class _State:
    def __init__(self, mode: str, controller: bool) -> None:
        self.mode = mode
        self.controller = (
            controller  # an xdist controller: runs no test, merges the workers' results
        )
        self.seen: set[tuple[Any, ...]] = set()
        self.errors: list[str] = []
        self.merged_findings: list[dict[str, Any]] = []
        self.merged_checked: dict[str, dict[str, Any]] = {}
        self.lost_workers: list[str] = []


def _is_xdist_controller(config: Any) -> bool:
    return (
        not hasattr(config, "workerinput")
        and config.pluginmanager.hasplugin("xdist")
        and getattr(config.option, "dist", "no") != "no"
        and bool(getattr(config.option, "numprocesses", 0))
    )


def pytest_configure(config: Any) -> None:
    if not (
        config.getoption("cg_runtime_check", default=False) or config.getini("cg_runtime_check")
    ):
        return
    mode = config.getoption("cg_runtime_check_mode", default=None) or config.getini(
        "cg_runtime_check_mode"
    )
    if mode not in MODES:
        raise pytest.UsageError(
            f"cg_runtime_check_mode must be one of {', '.join(MODES)}, not '{mode}'"
        )
    controller = _is_xdist_controller(config)
    state = _State(mode, controller)
    if controller:  # the workers import TensorFlow; here only say early that they cannot
        try:
            found = importlib.util.find_spec("tensorflow") is not None
            why = "No module named 'tensorflow'"
        except (ImportError, ValueError) as exc:
            found, why = False, str(exc)
        if not found:
            raise pytest.UsageError(
                f"--cg-runtime-check needs TensorFlow (the 'runtime' extra; pip install tensorflow): {why}"
            )
        setattr(config, _STATE_KEY, state)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow  # noqa: F401
    except ImportError as exc:
        raise pytest.UsageError(
            f"--cg-runtime-check needs TensorFlow (the 'runtime' extra; pip install tensorflow): {exc}"
        ) from None
    from . import checked
    from .exercise import Options, shadow_check

    setattr(config, _STATE_KEY, state)
    checked.install()
    options = Options()

    def hook(
        decorated: Any, args: tuple[Any, ...], info: Any, names: list[str], identity: Any
    ) -> None:
        signature = tuple(
            (str(getattr(a, "dtype", type(a).__name__)), tuple(getattr(a, "shape", ())))
            for a in args
        )
        # per wrapped definition, not per wrapper: functions sharing one wrapper differ here
        key = (identity, signature)
        if key in state.seen:
            return
        state.seen.add(key)
        try:
            shadow_check(decorated, args, info, names, options)
        except (
            Exception
        ) as exc:  # the re-run is ours: never turn it into a failure of the user's test
            if os.environ.get("RUNTIME_CHECK_DEBUG"):
                raise
            state.errors.append(f"{info.qualname}: {type(exc).__name__}: {exc}")

    checked.SHADOW_HOOK = hook


def _relative(path: str, root: str) -> str:
    if os.path.isabs(path):
        relative = os.path.relpath(path, root)
        return path if relative.startswith("..") else relative
    return path


def _local_findings(config: Any) -> list[dict[str, Any]]:
    """What this process's checked calls recorded, as plain dicts (they may go to a controller)."""
    from .discover import static_location
    from .issues import RECORDER

    root = str(config.rootpath)
    out = []
    for issue in RECORDER.issues:
        info = issue.definition
        line, column = static_location(info.path, info.qualname) or (info.line, info.column)
        line, column = int(line), int(column)
        out.append(
            {
                "path": _relative(info.path or info.module, root),
                "line": line,
                "column": column,
                "code": str(issue.code),
                "message": f"{issue.message}{issue.via_note()} [{issue.details()}]",
                "function": info.qualname,
                "mode": issue.mode,
                "via": issue.via,
                "inputs": issue.inputs or None,
                "origin": (issue.origin or None) if issue.inputs else None,
            }
        )  # plain types: execnet sends them
    return out


def _local_checked(config: Any) -> dict[str, dict[str, Any]]:
    """The custom gradients this process saw called, by definition key."""
    from .issues import RECORDER

    root = str(config.rootpath)
    return {
        key: {
            "path": _relative(info.path or info.module, root),
            "line": info.line,
            "qualname": info.qualname,
        }
        for key, info in list(RECORDER.calls.items())
    }


def _findings(config: Any, state: _State) -> list[Any]:
    from cg_lint.findings import Finding

    raw = list(state.merged_findings) if state.controller else _local_findings(config)
    unique: dict[tuple[Any, ...], dict[str, Any]] = {}
    for item in raw:  # two xdist workers may report the same function
        unique.setdefault(
            (item["path"], item["line"], item["column"], item["code"], item["function"], item.get("via", "")),
            item,
        )
    findings = [
        Finding(
            d["path"],
            d["line"],
            d["column"],
            d["code"],
            d["message"],
            function=d["function"],
            mode=d.get("mode"),
            inputs=d.get("inputs"),
            origin=d.get("origin"),
        )
        for d in unique.values()
    ]
    return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.code))


def _checked(config: Any, state: _State) -> dict[str, dict[str, Any]]:
    return state.merged_checked if state.controller else _local_checked(config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: take a finished worker's findings."""
    state = getattr(node.config, _STATE_KEY, None)
    if state is None:
        return
    output = getattr(node, "workeroutput", {}).get(_OUTPUT_KEY)
    if output is None:
        gateway = getattr(node, "gateway", None)
        state.lost_workers.append(str(getattr(gateway, "id", node)))
        return
    state.merged_findings.extend(output["findings"])
    state.merged_checked.update(output["checked"])
    state.errors.extend(output["errors"])


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    config = session.config
    state = getattr(config, _STATE_KEY, None)
    if state is None:
        return
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller reports and decides
        output = {
            "findings": _local_findings(config),
            "checked": _local_checked(config),
            "errors": state.errors,
        }
        config.workeroutput[_OUTPUT_KEY] = json.loads(
            json.dumps(output)
        )  # plain types only: execnet sends it
        return
    if state.mode != "fail" or exitstatus != 0:
        return
    if _findings(config, state) or state.lost_workers:
        session.exitstatus = 1


def _collection_errors(terminalreporter: Any) -> int:
    return sum(
        1
        for report in terminalreporter.stats.get("error", [])
        if getattr(report, "when", None) == "collect" or type(report).__name__ == "CollectReport"
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    state = getattr(config, _STATE_KEY, None)
    if state is None or hasattr(config, "workerinput"):
        return
    from .report import format_findings

    findings = _findings(config, state)
    checked = _checked(config, state)
    write = terminalreporter.write_line
    terminalreporter.section("custom-gradient runtime check")
    if findings:
        write(format_findings(findings, "concise"))
    if config.getoption("verbose", 0) > 0:
        for item in sorted(checked.values(), key=lambda c: (c["path"], c["line"], c["qualname"])):
            write(f"checked {item['path']}:{item['line']} {item['qualname']}")
    for error in state.errors:
        write(f"note: the traced re-run of {error}")
    for worker in state.lost_workers:
        write(f"error: the results of xdist worker {worker} were lost (it did not finish)")
    count = f"{len(checked)} custom gradient(s) checked through real calls"
    collect_errors = _collection_errors(terminalreporter)
    if collect_errors:  # never "no findings" for a suite that did not fully load
        write(
            f"{count}; incomplete: {collect_errors} collection error(s), "
            "so the tests that were not "
            f"collected were not checked; {len(findings)} finding(s)"
        )
    elif findings:
        verdict = (
            "failing the run"
            if state.mode == "fail"
            else "reported only (--cg-runtime-check-mode=warn)"
        )
        write(f"{count}; {len(findings)} finding(s), {verdict}")
    elif checked:
        write(f"{count}; no findings")
    else:
        write("no custom gradient was called by the tests that ran: nothing was checked")


def pytest_unconfigure(config: Any) -> None:
    state = getattr(config, _STATE_KEY, None)
    if state is None or state.controller:
        return
    from . import checked

    checked.SHADOW_HOOK = None
    checked.uninstall()
