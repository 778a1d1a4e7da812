"""The ``cg-lint`` command: ``cg-lint [check] PATH...`` and ``cg-lint rule CODE``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from cg_lint import __version__
from cg_lint.config import ConfigError, Settings, check_code_prefix, load_settings
from cg_lint.engine import FileResult, lint_source
from cg_lint.formatters import FORMATS, format_findings
from cg_lint.rules import ALL_RULES, RULES_BY_CODE
from cg_lint.runner import lint_paths

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, like every other bad input
        raise UsageError(message)


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
                epilog="Other command: 'cg-lint rule CODE' explains a rule; 'cg-lint rule --all' lists them.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .); '-' reads stdin")
    p.add_argument("--select", type=_codes, help="rule codes or prefixes to enable (default: CG0)")
    p.add_argument("--extend-select", type=_codes, help="codes to enable on top of the selection")
    p.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    p.add_argument("--exclude", type=lambda v: tuple(x for x in v.split(",") if x), help="replace the exclude patterns")
    p.add_argument("--extend-exclude", type=lambda v: tuple(x for x in v.split(",") if x), help="more exclude patterns")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply excludes to files named on the command line too (for pre-commit)")
    p.add_argument("--format", "--output-format", dest="format", choices=FORMATS, default="text")
    p.add_argument("--stdin-filename", help="the path to report for source read from stdin")
    p.add_argument("--config", type=Path, help="a pyproject.toml to read [tool.cg_lint] from")
    p.add_argument("--isolated", action="store_true", help="ignore configuration files")
    p.add_argument("--disable-noqa", action="store_true", help="report findings silenced by '# noqa'")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: cores)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    p.add_argument("--version", action="version", version=f"cg-lint {__version__}")
    return p


def _rule_command(argv: list[str]) -> int:
    p = _Parser(prog="cg-lint rule", description="Explain a rule.")
    p.add_argument("code", nargs="?")
    p.add_argument("--all", action="store_true", help="list every rule")
    args = p.parse_args(argv)
    if args.all or not args.code:
        width = max(len(r.name) for r in ALL_RULES)
        for r in ALL_RULES:
            print(f"{r.code}  {r.name:<{width}}  {r.title}")
        return EXIT_CLEAN
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        print(f"cg-lint: error: unknown rule '{args.code}' (see 'cg-lint rule --all')", file=sys.stderr)
        return EXIT_ERROR
    from cg_lint.docs import page

    print(page(rule), end="")
    return EXIT_CLEAN


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "rule":
            return _rule_command(argv[1:])
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
    except BrokenPipeError:
        return EXIT_CLEAN


def _settings(args: argparse.Namespace) -> Settings:
    if args.isolated:
        settings = Settings(root=str(Path.cwd()))
    elif args.config is not None:
        settings = load_settings(config=args.config)
    else:
        first = args.stdin_filename or (args.paths[0] if args.paths and args.paths[0] != "-" else ".")
        start = Path(first)
        start = start if start.is_dir() else start.parent if str(start.parent) else Path(".")
        settings = load_settings(start=start if start.exists() else Path.cwd())
    return settings.with_cli(select=args.select, ignore=args.ignore, exclude=args.exclude,
                             extend_exclude=args.extend_exclude,
                             extend_select=(settings.extend_select + args.extend_select) if args.extend_select else None)


def _check(args: argparse.Namespace) -> int:
    settings = _settings(args)
    paths = args.paths or ["."]
    results: list[FileResult] = []
    if paths == ["-"]:
        label = args.stdin_filename or "-"
        if args.force_exclude and args.stdin_filename and settings.is_excluded(label):
            return EXIT_CLEAN
        data = sys.stdin.buffer.read()
        results.append(lint_source(data, label, settings, apply_noqa=not args.disable_noqa))
    elif "-" in paths:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    else:
        for result in lint_paths(paths, settings, args.jobs, args.force_exclude):
            if args.disable_noqa and result.parsed:
                result = lint_source(Path(result.path).read_bytes(), result.path, settings, apply_noqa=False)
            results.append(result)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key())
    errors = [r.error for r in results if r.error is not None]
    sources = _sources(findings) if args.format == "text" else None
    out = format_findings(findings, args.format, sources)
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    for error in errors:
        print(error.one_line(), file=sys.stderr)
    if args.format in ("text", "concise") and not args.quiet:
        checked = sum(1 for r in results if r.parsed)
        files = len({f.path for f in findings})
        summary = (f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} in {files} "
                   f"file{'s' if files != 1 else ''}" if findings else "No problems found")
        print(f"{summary} ({checked} file{'s' if checked != 1 else ''} with custom gradients checked"
              + (f", {len(errors)} could not be checked)" if errors else ")"), file=sys.stderr)
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _sources(findings) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in {f.path for f in findings}:
        try:
            out[path] = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
    return out


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
