"""The ``cg-lint`` command: ``cg-lint [check] PATH...`` and ``cg-lint rule CODE``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cg_lint import __version__
from cg_lint.config import TRACE_CONTEXTS, ConfigError, Settings, check_code_prefix, load_settings
from cg_lint.findings import FileError, FileResult, Finding
from cg_lint.formatters import FORMATS, fix_counts, format_findings
from cg_lint.pipes import broken_pipe, flushed, write_all
from cg_lint.processes import parse_jobs
from cg_lint.runner import Interrupted, lint_paths
from cg_lint.prefilter import might_contain
from cg_lint.sources import lines_of, read_lines, read_regular, split_lines, too_large

if TYPE_CHECKING:
    from cg_lint.fixes import FixOutcome

# The engine, the rules and the fixer import libcst (~0.15 s): imported where needed, so a run over
# files without custom gradients never pays for it.

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad input
        raise UsageError(message)

    def _print_message(self, message: str, file=None) -> None:  # argparse drops a lost --help
        if message:
            (file or sys.stderr).write(message)


def _codes(value: str) -> tuple[str, ...]:
    codes = tuple(c.strip() for c in value.split(",") if c.strip())
    for c in codes:
        try:
            check_code_prefix(c, "option")
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e).removeprefix("option: ")) from None
    return codes


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="cg-lint", description="Lint TensorFlow custom gradients (@tf.custom_gradient).",
                epilog="Other commands: 'cg-lint rule CODE' explains a rule, 'cg-lint rule --all' lists them; "
                       "'cg-lint server' is a language server for editors; 'cg-lint helper status|stop' shows or "
                       "stops the flake8 plugin's warm helper (docs/editors.md).")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .); '-' reads stdin")
    p.add_argument("--select", type=_codes, help="rule codes or prefixes to enable (default: CG0)")
    p.add_argument("--extend-select", type=_codes, help="codes to enable on top of the selection")
    p.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    p.add_argument("--exclude", type=lambda v: tuple(x for x in v.split(",") if x), help="replace the exclude patterns")
    p.add_argument("--extend-exclude", type=lambda v: tuple(x for x in v.split(",") if x), help="more exclude patterns")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply excludes to files named on the command line too (for pre-commit)")
    p.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text",
                   help="text (default), concise, json, sarif or github")
    p.add_argument("--fix", action="store_true", help="apply the safe fixes and write the files back")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that are not always safe")
    p.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff and write nothing (exit 1 if there are any)")
    p.add_argument("--stdin-filename", help="the path to report for source read from stdin")
    p.add_argument("--config", type=Path, help="a pyproject.toml to read [tool.cg_lint] from")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    p.add_argument("--disable-noqa", action="store_true", help="report findings silenced by '# noqa'")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("-j", "--jobs", type=parse_jobs, default=None, metavar="N",
                   help="worker processes: a number, or 'auto' or 0 for one per core (the default)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    p.add_argument("--cache-dir", help="the result cache's folder (default: $CG_LINT_CACHE_DIR or ~/.cache/cg-lint)")
    p.add_argument("--trace-context", choices=TRACE_CONTEXTS, default=None,
                   help="report graph-mode rules where the project can trace the definition (auto, the "
                        "default), always, or never (docs/trace-context.md)")
    p.add_argument("--version", action="version", version=f"cg-lint {__version__}")
    return p


def _rule_command(argv: list[str]) -> int:
    p = _Parser(prog="cg-lint rule", description="Explain a rule.")
    p.add_argument("code", nargs="?")
    p.add_argument("--all", action="store_true", help="list every code: the rules, runtime-check's, the tool's")
    args = p.parse_args(argv)
    if args.all or not args.code:
        _list_codes()
        return EXIT_CLEAN
    from cg_lint.docs import code_page

    text = code_page(args.code.upper())  # a rule's page; for a runtime or the tool's code, its entry
    if text is None:
        print(f"cg-lint: error: unknown rule '{args.code}' (see 'cg-lint rule --all')", file=sys.stderr)
        return EXIT_ERROR
    print(text, end="")
    return EXIT_CLEAN


def _list_codes() -> None:
    """Every code either tool reports: the linter's rules, runtime-check's own checks, the tool's."""
    from cg_lint.codes import CODES, RUNTIME_PAGE
    from cg_lint.rules import ALL_RULES

    groups = [
        ("cg-lint rules (cg-lint rule CODE explains one):", [(r.code, r.name, r.title) for r in ALL_RULES]),
        (f"runtime-check only ({RUNTIME_PAGE}#checks):",
         [(c, c.name, _short(c.summary, c.info)) for c in CODES.values() if c.runtime_only]),
        ("cg-lint itself:", [(c, c.name, _short(c.summary, c.info)) for c in CODES.values()
                             if not c.is_rule and not c.runtime_only]),
    ]
    width = max(len(name) for _, rows in groups for _, name, _ in rows)
    for n, (heading, rows) in enumerate(groups):
        print(("\n" if n else "") + heading)
        for code, name, title in rows:
            print(f"{code}  {name:<{width}}  {title}")


def _short(summary: str, info: bool) -> str:
    """A code's summary cut to one clause for a listing: the opt-in flag named at the end."""
    import re

    flag = re.match(r"\(`(--[\w-]+)`\) ", summary)
    if flag:
        summary = summary[flag.end():]
    if info:
        summary = summary.removeprefix("info: ")
    summary = re.split(r"\. |; |: (?=[a-z])", summary, maxsplit=1)[0]
    summary = re.sub(r" \((?:also|does|the|a|in|not)\b[^()]*\)", "", summary)
    notes = [n for n in (flag.group(1) if flag else "", "info" if info else "") if n]
    return summary + (f" ({', '.join(notes)})" if notes else "")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "server":  # stdout is the protocol's: the server ends on its own terms
        from cg_lint.server import main as server_main

        return server_main(argv[1:])
    try:
        status = _main(argv)
    except BrokenPipeError:  # the reader of our output went away: it was lost, so no success
        return broken_pipe()
    except SystemExit as e:  # --help and --version print, then exit through argparse
        status = e.code if isinstance(e.code, int) else 0 if e.code is None else EXIT_ERROR
    return flushed(status)


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] == "rule":
            return _rule_command(argv[1:])
        if argv and argv[0] == "helper":  # the flake8 plugin's warm helper (docs/editors.md)
            from cg_lint.helper.client import command

            return command(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        return _check(_check_parser().parse_args(argv))
    except UsageError as e:
        print(f"cg-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except ConfigError as e:
        print(f"cg-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Interrupted as e:  # SIGTERM/SIGHUP while the pool ran: the workers are stopped
        return 128 + e.signum


def _settings(args: argparse.Namespace) -> Settings:
    if args.isolated:
        settings = Settings(root=str(Path.cwd()))
    elif args.config is not None:
        settings = load_settings(config=args.config)
    else:
        first = args.stdin_filename or (args.paths[0] if args.paths and args.paths[0] != "-" else ".")
        start = Path(first)
        # os.stat, not Path.is_dir: a folder above without search permission raises PermissionError
        start = start if _stat_ok(start, dir_only=True) else start.parent if str(start.parent) else Path(".")
        settings = load_settings(start=start if _stat_ok(start) else Path.cwd())
    return settings.with_cli(select=args.select, ignore=args.ignore, exclude=args.exclude,
                             trace_context=args.trace_context,
                             extend_exclude=args.extend_exclude,
                             extend_select=(settings.extend_select + args.extend_select)
                             if args.extend_select else None)


def _stat_ok(path: Path, dir_only: bool = False) -> bool:
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(mode) or not dir_only


def _check(args: argparse.Namespace) -> int:
    settings = _settings(args)
    paths = args.paths or ["."]
    if "-" in paths and paths != ["-"]:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    if paths == ["-"]:
        return _check_stdin(args, settings)
    results: list[FileResult] = []
    for result in lint_paths(paths, settings, args.jobs, args.force_exclude, _result_cache(args, settings)):
        if args.disable_noqa and result.parsed:
            from cg_lint.engine import lint_source

            data = read_regular(result.path, settings.max_file_size)
            result = FileResult(result.path, error=data) if isinstance(data, FileError) else \
                lint_source(data, result.path, settings, apply_noqa=False)
        results.append(result)
    if args.fix or args.diff:
        return _fix_files(args, settings, results)
    findings = sorted(_in_context(settings, [f for r in results for f in r.findings]), key=lambda f: f.sort_key())
    errors = [r.error for r in results if r.error is not None]
    _report(args, findings, read_lines(f.path for f in findings) if args.format == "text" else None, sys.stdout)
    for error in errors:
        print(error.one_line(), file=sys.stderr)
    _lint_summary(args, findings, sum(1 for r in results if r.parsed), errors)
    return _exit(args, findings, errors)


def _in_context(settings: Settings, findings: list[Finding], overlays: dict[str, str] | None = None) -> list[Finding]:
    """Graph-mode findings kept only where the project can trace the definition, and counts checked
    against the project's calls (cg_lint/project)."""
    if not findings:
        return findings
    from cg_lint.answering import answer_leads
    from cg_lint.project import TraceContexts, in_context

    contexts = TraceContexts(overlays)
    # leads first: an answered one is a graph-mode finding like any other
    return in_context(answer_leads(findings, contexts), settings.trace_context, contexts)


def _answered(findings: list[Finding], overlays: dict[str, str] | None = None) -> list[Finding]:
    """Leads answered, for reports that skip the trace context (--fix): never shown unanswered."""
    if not any(f.lead is not None for f in findings):
        return findings
    from cg_lint.answering import answer_leads
    from cg_lint.project import TraceContexts

    return answer_leads(findings, TraceContexts(overlays))


def _result_cache(args: argparse.Namespace, settings: Settings):
    """Results of unchanged files from earlier runs (cg_lint/result_cache.py); None with --no-cache."""
    if args.no_cache:
        return None
    from cg_lint.result_cache import open_cache, settings_key

    # --cache-dir is the user's; the configured folder is the repository's: confined to it
    cache, warning = open_cache(settings_key(settings, "cli"), args.cache_dir, settings.cache_dir, settings.root)
    if warning:
        print(f"cg-lint: warning: {warning}", file=sys.stderr)
    return cache


def _check_stdin(args: argparse.Namespace, settings: Settings) -> int:
    label = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    excluded = args.force_exclude and args.stdin_filename and settings.is_excluded(label)
    if not excluded and len(data) > settings.max_file_size and might_contain(data, settings.markers()):
        if args.fix and not args.diff:  # an editor replaces its buffer with this: give it back whole
            write_all(sys.stdout, data)
        print(too_large(label, len(data), settings.max_file_size).one_line(), file=sys.stderr)
        return EXIT_ERROR
    if not (args.fix or args.diff):
        if excluded:
            return EXIT_CLEAN
        cache = None if args.disable_noqa else _result_cache(args, settings)
        from cg_lint.result_cache import lookup

        key, result = lookup(cache, label, data)
        if result is None:
            from cg_lint.engine import lint_source

            result = lint_source(data, label, settings, apply_noqa=not args.disable_noqa)
            if cache is not None and key is not None:
                cache.put(key, result)
        findings = _in_context(settings, result.findings, {label: data.decode("utf-8", "replace")})
        errors = [result.error] if result.error else []
        sources = {label: lines_of(data, label)} if args.format == "text" else None
        _report(args, findings, sources, sys.stdout)
        for error in errors:
            print(error.one_line(), file=sys.stderr)
        _lint_summary(args, findings, int(result.parsed), errors)
        return _exit(args, findings, errors)
    from cg_lint.fixes import encode_source, fix_source, read_source, unified_diff

    # an editor replaces its buffer with what --fix prints: always print the source, fixed or not
    source = read_source(data, label)
    if isinstance(source, FileError) or excluded:
        if args.fix and not args.diff:
            write_all(sys.stdout, data)
        if isinstance(source, FileError):
            print(source.one_line(), file=sys.stderr)
            return EXIT_ERROR
        return EXIT_CLEAN
    outcome = fix_source(source.text, label, settings, unsafe=args.unsafe_fixes, apply_noqa=not args.disable_noqa)
    _warn_unconverged(outcome)
    errors = [outcome.error] if outcome.error else []
    for error in errors:
        print(error.one_line(), file=sys.stderr)
    if errors and not outcome.changed:  # could not be checked (e.g. a syntax error): nothing to report
        if args.fix and not args.diff:
            write_all(sys.stdout, data)
        return EXIT_ERROR
    if args.diff:
        write_all(sys.stdout, unified_diff(label, outcome.original, outcome.text))
        _fix_summary(args, [outcome], would=True)
        return EXIT_ERROR if errors else EXIT_FINDINGS if outcome.changed and not args.exit_zero else EXIT_CLEAN
    write_all(sys.stdout, encode_source(outcome.text, source.encoding))
    sources = {label: split_lines(outcome.text)} if args.format == "text" else None
    remaining = _answered(outcome.remaining, {label: outcome.text})
    _report(args, remaining, sources, sys.stderr)
    _fix_summary(args, [outcome])
    return _exit(args, remaining, errors)


def _fix_files(args: argparse.Namespace, settings: Settings, results: list[FileResult]) -> int:
    from cg_lint.fixes import applicable, unified_diff

    errors: list[FileError] = []
    outcomes: list[FixOutcome] = []
    findings: list[Finding] = []
    sources: dict[str, list[str]] = {}
    for result in results:
        if result.error is not None:
            errors.append(result.error)
            continue
        if not applicable(result.findings, args.unsafe_fixes):
            findings.extend(result.findings)
            continue
        outcome = _fix_file(args, settings, result.path)
        if isinstance(outcome, FileError):
            errors.append(outcome)
            findings.extend(result.findings)
            continue
        _warn_unconverged(outcome)
        outcomes.append(outcome)
        findings.extend(outcome.remaining)
        sources[outcome.path] = split_lines(outcome.text)
        if outcome.error is not None:
            errors.append(outcome.error)
    errors.sort(key=lambda e: e.path)
    findings = _answered(findings)
    if args.diff:
        for outcome in sorted(outcomes, key=lambda o: o.path):
            write_all(sys.stdout, unified_diff(outcome.path, outcome.original, outcome.text))
    else:
        findings.sort(key=lambda f: f.sort_key())
        if args.format == "text":
            sources.update(read_lines(f.path for f in findings if f.path not in sources))
        _report(args, findings, sources, sys.stdout)
    for error in errors:
        print(error.one_line(), file=sys.stderr)
    _fix_summary(args, outcomes, would=args.diff, unchanged=findings)
    if errors:
        return EXIT_ERROR
    if args.diff:
        return EXIT_FINDINGS if any(o.changed for o in outcomes) and not args.exit_zero else EXIT_CLEAN
    return _exit(args, findings, errors)


def _fix_file(args: argparse.Namespace, settings: Settings, path: str) -> FixOutcome | FileError:
    import os

    from cg_lint.fixes import WriteError, encode_source, fix_source, read_source, write_atomic

    try:
        before = os.stat(path)
    except OSError as e:
        return FileError(path, f"cannot read: {e.strerror or e}")
    data = read_regular(path, settings.max_file_size)
    if isinstance(data, FileError):
        return data
    source = read_source(data, path)
    if isinstance(source, FileError):
        return source
    outcome = fix_source(source.text, path, settings, unsafe=args.unsafe_fixes, apply_noqa=not args.disable_noqa)
    if outcome.changed and not args.diff:
        try:
            new = encode_source(outcome.text, source.encoding)
        except UnicodeEncodeError:
            return FileError(path, f"cannot write the fixes: the fixed text is not encodable as {source.encoding}")
        try:
            write_atomic(path, new, expected=before, original=data)
        except WriteError as e:  # refused: the message says what became of the file
            return FileError(path, f"cannot write the fixes: {e.strerror}")
        except OSError as e:
            return FileError(path, f"cannot write the fixes: {e.strerror or e} (the file is unchanged)")
    return outcome


def _report(args: argparse.Namespace, findings: list[Finding], sources, stream) -> None:
    out = format_findings(findings, args.format, sources, stream, unsafe_fixes=args.unsafe_fixes)
    if out:
        write_all(stream, out)


def _lint_summary(args: argparse.Namespace, findings: list[Finding], checked: int, errors: list[FileError]) -> None:
    if args.format in ("text", "concise") and not args.quiet:
        checked_note = f" ({_plural(checked, 'file')} with custom gradients checked"
        print(_found_summary(findings, args.unsafe_fixes) + checked_note
              + (f", {len(errors)} could not be checked)" if errors else ")"), file=sys.stderr)


def _found_summary(findings: list[Finding], unsafe_fixes: bool) -> str:
    if not findings:
        return "No problems found"
    files = len({f.path for f in findings})
    text = f"Found {_plural(len(findings), 'problem')} in {_plural(files, 'file')}"
    now, hidden = fix_counts(findings, unsafe_fixes)
    if now:
        text += f", {now} fixable with --fix" + (" --unsafe-fixes" if unsafe_fixes else "")
    if hidden:
        text += f", {hidden} more with --unsafe-fixes"
    return text


def _fix_summary(args: argparse.Namespace, outcomes: list[FixOutcome], would: bool = False,
                 unchanged: list[Finding] | None = None) -> None:
    if args.quiet or args.format not in ("text", "concise"):
        return
    fixed = sum(o.fixed for o in outcomes)
    remaining = len(unchanged) if unchanged is not None else sum(len(o.remaining) for o in outcomes)
    verb = "Would fix" if would else "Fixed"
    print(f"{verb} {_plural(fixed, 'problem')}, {remaining} remaining", file=sys.stderr)


def _warn_unconverged(outcome: FixOutcome) -> None:
    from cg_lint.fixes import MAX_ITERATIONS

    if not outcome.converged:
        print(f"cg-lint: warning: {outcome.path}: fixes did not converge after {MAX_ITERATIONS} passes "
              "(please report this)", file=sys.stderr)


def _exit(args: argparse.Namespace, findings: list[Finding], errors: list[FileError]) -> int:
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
