"""pytest plugin: check every custom-gradient call the test suite makes.

``pytest --cg-runtime-check`` (findings fail the run) or ``--cg-runtime-check=warn`` (report only).
The checked decorator is installed at ``pytest_configure``, before test modules are imported, so
functions decorated at import (or later, at call time) are wrapped. Each eager call is also
re-run once per input signature, eagerly and traced with ``tf.function``, and the gradients compared.

This module must stay cheap to import: it is loaded for every pytest run once the package is
installed, and TensorFlow is imported only when the option is given.
"""

from __future__ import annotations

import os
from typing import Any

_STATE_KEY = "_cg_runtime_check_state"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("cg-runtime-check", "custom-gradient runtime checks")
    group.addoption(
        "--cg-runtime-check", action="store", nargs="?", const="fail", default=None, choices=("fail", "warn"),
        dest="cg_runtime_check",
        help="check every tf.custom_gradient call eagerly and under tf.function; "
             "findings fail the run (=fail, the default) or are only reported (=warn). "
             "Write it as --cg-runtime-check=warn, or after the test paths.",
    )


class _State:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.seen: set[tuple[Any, ...]] = set()
        self.errors: list[str] = []


def pytest_configure(config: Any) -> None:
    mode = config.getoption("cg_runtime_check", default=None)
    if not mode:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from . import checked
    from .exercise import Options, shadow_check

    state = _State(mode)
    setattr(config, _STATE_KEY, state)
    checked.install()
    options = Options()

    def hook(decorated: Any, args: tuple[Any, ...], info: Any, names: list[str]) -> None:
        signature = tuple((str(getattr(a, "dtype", type(a).__name__)), tuple(getattr(a, "shape", ()))) for a in args)
        key = (info.key, signature)
        if key in state.seen:
            return
        state.seen.add(key)
        try:
            shadow_check(decorated, args, info, names, options)
        except Exception as exc:  # the re-run is ours: never turn it into a failure of the user's test
            if os.environ.get("RUNTIME_CHECK_DEBUG"):
                raise
            state.errors.append(f"{info.qualname}: {type(exc).__name__}: {exc}")

    checked.SHADOW_HOOK = hook


def _findings(config: Any) -> list[Any]:
    from cg_lint.findings import Finding

    from .discover import static_location
    from .issues import RECORDER

    root = str(config.rootpath)
    out = []
    for issue in RECORDER.issues:
        info = issue.definition
        line, column = static_location(info.path, info.qualname) or (info.line, info.column)
        path = info.path or info.module
        if os.path.isabs(path):
            relative = os.path.relpath(path, root)
            path = path if relative.startswith("..") else relative
        details = issue.mode if not issue.inputs else f"{issue.mode}; inputs {issue.inputs}"
        out.append(Finding(path, line, column, issue.code, f"{issue.message} [{details}]",
                           function=info.qualname, mode=issue.mode))
    return sorted(out, key=lambda f: (f.path, f.line, f.column, f.code))


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    state = getattr(session.config, _STATE_KEY, None)
    if state is None or state.mode != "fail":
        return
    if _findings(session.config) and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    state = getattr(config, _STATE_KEY, None)
    if state is None:
        return
    from .report import format_findings

    findings = _findings(config)
    terminalreporter.section("custom-gradient runtime check")
    if not findings:
        terminalreporter.write_line("no findings")
        return
    terminalreporter.write_line(format_findings(findings, "concise"))
    verdict = "failing the run" if state.mode == "fail" else "reported only (--cg-runtime-check=warn)"
    terminalreporter.write_line(f"{len(findings)} finding(s), {verdict}")


def pytest_unconfigure(config: Any) -> None:
    if getattr(config, _STATE_KEY, None) is None:
        return
    from . import checked

    checked.SHADOW_HOOK = None
    checked.uninstall()
