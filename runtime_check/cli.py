"""``runtime-check TARGET ...``: run custom gradients eagerly and under tf.function.

Exit codes (as cg-lint's): 0 clean, 1 findings, 2 usage or internal error; interrupted by a
signal: 128 + its number (130 for Ctrl-C), after printing the results so far.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cg_lint.codes import INFO_CODES
from cg_lint.config import ConfigError, Settings, load_settings
from cg_lint.formatters import FORMATS
from cg_lint.pipes import broken_pipe, flushed, write_all
from cg_lint.processes import parse_jobs

from . import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # one line, exit 2
        self.exit(EXIT_ERROR, f"runtime-check: error: {message}\n")

    def _print_message(self, message: str, file: Any = None) -> None:  # argparse drops a lost --help
        if message:
            (file or sys.stderr).write(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="runtime-check", description=(
        "Run TensorFlow custom gradients eagerly and under tf.function and check arity, shape, dtype, "
        "variables, NaN/Inf and eager/graph agreement."))
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="a file, a folder or a dotted module name")
    parser.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text",
                        help="output format (default: text, with a summary table)")
    parser.add_argument("--only-flagged", action="store_true",
                        help="check only the functions cg-lint flags")
    parser.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                        help="per-function time limit, also for each module's import "
                             "(default 60, or [tool.cg_lint.runtime] timeout)")
    parser.add_argument("-j", "--jobs", type=parse_jobs, default=None, metavar="N",
                        help="worker processes checking functions in parallel: a number, "
                             "or 'auto' or 0 for one per core (the default)")
    parser.add_argument("--max-memory", type=_size, default=None, metavar="SIZE",
                        help="memory cap per worker, e.g. 2G: a function that needs more is stopped (CG123)")
    parser.add_argument("--jit", action="store_true", default=None, help="trace with tf.function(jit_compile=True)")
    parser.add_argument("--numeric", action="store_true", default=None,
                        help="also compare with a numerical gradient in float64 (for exact gradients)")
    parser.add_argument("--zero-upstream", action="store_true", default=None,
                        help="also check that grad returns zeros for a zero upstream")
    parser.add_argument("--second-order", action="store_true", default=None,
                        help="also check that grad is itself differentiable (Hessian-vector products)")
    parser.add_argument("--broadcast-shapes", action="store_true", default=None,
                        help="also report gradient shapes on inputs with a parameter broadcast as a bias "
                             "or scale is, when nothing in the project calls it so (CG111)")
    parser.add_argument("--no-magnitudes", action="store_true", help="skip the ±100 and 0 NaN/Inf probes")
    parser.add_argument("--plot", metavar="DIR",
                        help="a PNG per function: its custom gradient beside autodiff along a line "
                             "through its inputs; DIR/index.html sums them up (needs matplotlib)")
    parser.add_argument("--config", metavar="PYPROJECT",
                        help="read [tool.cg_lint] (and its runtime table) from this file")
    parser.add_argument("--version", action="version", version=f"runtime-check {__version__}")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: '{text}'") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, not '{text}'")
    return value


def _size(text: str) -> int:
    from .supervisor import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = _run(build_parser().parse_args(argv))
    except KeyboardInterrupt:  # before any worker started (runner.run handles it after)
        sys.stderr.write("runtime-check: interrupted\n")
        status = 128 + signal.SIGINT
    except BrokenPipeError:  # the reader went away and output was lost: never a success
        return broken_pipe()
    except SystemExit as exc:  # --help, --version and usage errors exit through argparse
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else EXIT_ERROR
    return flushed(status)


class _Stop(Exception):
    """Setting up the run failed: one line for stderr (already worded), and the exit status."""


def _setup(args: argparse.Namespace) -> tuple[Settings, Any, list[Any], dict[str, list[str]] | None]:
    """Settings, the runtime configuration, the units to check and --only-flagged's selection."""
    from . import specs
    from .targets import TargetError, expand

    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise _Stop("runtime-check: error: --plot needs matplotlib (the 'plot' extra): "
                        "pip install matplotlib") from None
    if args.config and not Path(args.config).is_file():
        raise _Stop(f"runtime-check: error: {args.config}: no such file")
    try:
        settings = load_settings(Path(args.config) if args.config else None)
        config = specs.from_settings(settings)
        units = expand(args.targets, settings=settings, on_skip=_say)
    except (ConfigError, TargetError) as exc:
        raise _Stop(str(exc)) from None
    only = None
    if args.only_flagged:
        only, message = _flagged(units, settings)
        if message:
            raise _Stop(f"runtime-check: error: {message}")
    return settings, config, units, only


def _run(args: argparse.Namespace) -> int:
    from . import runner
    from .report import format_findings, sort_findings, to_finding

    try:
        settings, config, units, only = _setup(args)
    except _Stop as stop:
        return _error(str(stop), prefix=False)
    options = _options(args, config)
    timeout = args.timeout or config.timeout
    if not units:
        if args.format == "json":
            print("[]")
        elif args.format == "text":
            print("no custom gradients found (no Python file mentions custom_gradient)")
        return EXIT_CLEAN
    started = time.time()
    result = runner.run(units, options, config.functions, timeout, only=only, plot=args.plot,
                        progress=runner.Progress(), decorators=settings.decorators,
                        jobs=args.jobs or None, max_memory=args.max_memory)
    if args.plot:
        from .plot_summary import write_summary

        page = write_summary(args.plot, result.entries.values(), started - 1.0)
        if page is not None:
            sys.stderr.write(f"plots: {page} (and summary.md beside it)\n")
    for line in result.errors:
        sys.stderr.write(line + "\n")
    raw = list(result.findings)
    for entry in result.entries.values():
        raw.extend(entry.findings)
    findings = sort_findings(to_finding(item) for item in raw)
    output = format_findings(findings, args.format)
    if output:
        write_all(sys.stdout, output + "\n")
    if args.format == "text" and not result.entries and not findings:
        print(f"no custom gradients found in {len(units)} module(s)")
    if args.format == "text" and result.entries:
        _print_summary(result, findings)
    sys.stdout.flush()
    return _exit_status(result, findings)


def _options(args: argparse.Namespace, config: Any) -> dict[str, bool]:
    """The checks to run: a command-line flag wins over [tool.cg_lint.runtime]."""

    def chosen(flag: bool | None, configured: bool) -> bool:
        return bool(flag if flag is not None else configured)

    return {
        "jit": chosen(args.jit, config.jit),
        "numeric": chosen(args.numeric, config.numeric),
        "zero_upstream": chosen(args.zero_upstream, config.zero_upstream),
        "magnitudes": config.magnitudes and not args.no_magnitudes,
        "second_order": chosen(args.second_order, config.second_order),
        "broadcast_shapes": chosen(args.broadcast_shapes, config.broadcast_shapes),
    }


_STATUS_TEXT = {"timeout": "timed out", "crash": "crashed", "no-inputs": "no valid inputs",
                "memory": "over memory cap", "pending": "not finished (interrupted)",
                "error": "internal error"}


def _print_summary(result: Any, findings: list[Any]) -> None:
    """The table of functions (result and inputs used), then the count line."""
    from .paths import shown_path
    from .report import describe_inputs, is_failure, summary_table

    rows = []
    for entry in sorted(result.entries.values(), key=lambda e: (e.path, e.line)):
        failing = [f for f in entry.findings if f["code"] not in INFO_CODES]
        status = _STATUS_TEXT.get(entry.status) or (f"{len(failing)} finding(s)" if failing else "ok")
        rows.append((f"{shown_path(entry.path)}:{entry.qualname}", status, describe_inputs(entry.used)))
    print()
    print(summary_table(rows))
    failures = sum(1 for f in findings if is_failure(f))
    checked = sum(1 for e in result.entries.values() if e.status != "pending")
    print(f"\n{checked} function(s) checked, {failures} finding(s)")


def _exit_status(result: Any, findings: list[Any]) -> int:
    from .report import is_failure

    if result.interrupted:
        done = sum(1 for e in result.entries.values() if e.status != "pending")
        sys.stderr.write(f"runtime-check: interrupted by {result.interrupted}: the results above cover {done} of "
                         f"{len(result.entries)} function(s) found so far\n")
        return 128 + signal.Signals[result.interrupted].value
    if result.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if any(is_failure(f) for f in findings) else EXIT_CLEAN


def _flagged(units: list, settings: Settings) -> tuple[dict[str, list[str]] | None, str | None]:
    """Qualnames cg-lint flags (with the project's settings), per unit index."""
    from cg_lint.api import lint_source

    flagged: dict[str, list[str]] = {}
    for index, unit in enumerate(units):
        if unit.path is None:
            return None, f"--only-flagged needs file or folder targets, not the module name '{unit.module}'"
        source = Path(unit.path).read_text(encoding="utf-8", errors="replace")
        findings, error = lint_source(source, unit.path, settings)
        flagged[str(index)] = sorted({f.function for f in findings if f.function})
    return flagged, None


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")


def _error(message: str, prefix: bool = True) -> int:
    sys.stderr.write(f"runtime-check: error: {message}\n" if prefix else f"{message}\n")
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
