"""Share of the custom gradients in installed libraries that runtime-check exercises with no configuration.

    python bench/runtime_coverage.py [--timeout 60] [--packages tensorflow keras tensorflow_probability]

The population is every custom gradient in each package's own source (tests, generated API
re-exports and TFP's NumPy/JAX substrates left out): the definitions cg-lint finds
(``tf.custom_gradient`` in all its spellings), plus TensorFlow Probability's functions decorated
with its ``custom_gradient(vjp_fwd=..., vjp_bwd=...)`` helper, which builds a ``tf.custom_gradient``
when called. A definition counts as *exercised* when runtime-check, run with no configuration over
its module, called it with inputs it found and checked the gradient eagerly and traced (TFP's
helper-decorated functions: when the public function itself was called that way). The rest are
listed with the reason runtime-check gives, grouped.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SKIP_PARTS = ("/substrates/", "/_api/", "/tests/", "/testing/", "/test_util", "/compat/v1")


def package_files(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return []
    root = Path(spec.origin).parent
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in names:
            path = Path(folder) / name
            text = str(path)
            if name.endswith(".py") and not name.endswith("_test.py") and not any(p in text for p in SKIP_PARTS):
                files.append(path)
    return files


def _tfp_helper_decorated(tree: ast.Module) -> list[str]:
    """Qualnames of functions decorated with TFP's ``custom_gradient(vjp_fwd=..., vjp_bwd=...)``."""
    found = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("custom_gradient") \
                            and any(k.arg in ("vjp_fwd", "vjp_bwd") for k in decorator.keywords):
                        found.append(f"{prefix}{node.name}")
                visit(node.body, f"{prefix}{node.name}.<locals>.")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


def population(packages: list[str]) -> list[tuple[str, str, str, str]]:
    """(package, path, qualname, how) for every custom gradient; how is 'tf' or 'tfp-helper'."""
    from cg_lint.api import find_custom_gradients

    out = []
    for package in packages:
        for path in package_files(package):
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "custom_gradient" not in source:
                continue
            for definition in find_custom_gradients(source, str(path)):
                out.append((package, str(path), definition.qualname, "tf"))
            if package == "tensorflow_probability":
                try:
                    tree = ast.parse(source)
                except SyntaxError:
                    continue
                out.extend((package, str(path), q, "tfp-helper") for q in _tfp_helper_decorated(tree))
    return out


def _holds(entry, qualname: str, top: str) -> bool:
    """The entry runtime-check calls to reach ``qualname``: itself, its outer function, its class."""
    called_as = entry.id.split(":", 1)[1]
    return entry.qualname == qualname or called_as in (qualname, top) or top.startswith(called_as + ".")


_WHY = re.compile(r"no valid inputs found \((?:searched without configuration|declared inputs): (.*)\)$")


def _reason(message: str) -> str:
    match = _WHY.search(message)
    text = match.group(1) if match else message
    return re.sub(r" \(tried \d+ input sets\)", "", re.sub(r"'[^']*'", "'…'", text))


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", nargs="+", default=["tensorflow", "keras", "tensorflow_probability"])
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("-v", "--verbose", action="store_true", help="list every custom gradient")
    args = parser.parse_args()
    missing = [p for p in args.packages if importlib.util.find_spec(p) is None]
    if missing:
        parser.error(f"not installed in this Python: {', '.join(missing)} (run it with the project's environment)")
    return args


def main() -> int:
    args = _arguments()
    from runtime_check import runner
    from runtime_check.targets import file_unit

    items = population(args.packages)
    paths = sorted({path for _, path, _, _ in items})
    units = [file_unit(Path(p)) for p in paths]
    options = {"jit": False, "numeric": False, "zero_upstream": False, "magnitudes": True, "second_order": False}
    started = time.perf_counter()
    result = runner.run(units, options, {}, args.timeout)
    elapsed = time.perf_counter() - started
    entries = list(result.entries.values())
    called_ok = {c for e in entries if e.used for c in e.called}
    rows, reasons = [], Counter()
    exercised = Counter()
    totals = Counter()
    for package, path, qualname, how in items:
        totals[package] += 1
        top = qualname.split(".<locals>")[0]
        mine = [e for e in entries if os.path.abspath(e.path) == path and _holds(e, qualname, top)]
        done = f"{path}:{qualname}" in called_ok if how == "tf" else any(e.used and e.called for e in mine)
        if done:
            exercised[package] += 1
            rows.append((package, qualname, "exercised"))
            continue
        why = ""
        for entry in mine:
            for finding in entry.findings:
                if finding["code"] == "CG130":
                    why = _reason(finding["message"])
            if not why and entry.status in ("timeout", "crash"):
                why = f"the check {'timed out' if entry.status == 'timeout' else 'crashed'}"
            if not why and entry.used:
                why = "its caller was checked, but no input took the path that reaches it"
        if not mine:
            module_errors = [f["message"] for f in result.findings if f["path"] == path]
            why = ("the module cannot be imported: " + module_errors[0].split(": ", 1)[-1][:80]) if module_errors \
                else "not reachable as a module attribute"
        reasons[why or "unknown"] += 1
        rows.append((package, qualname, f"not exercised: {why}"))
    total = sum(totals.values())
    done = sum(exercised.values())
    print(f"runtime-check coverage, no configuration ({elapsed:.0f} s, {len(units)} modules)\n")
    print("| package | custom gradients | exercised | share |")
    print("|---|---|---|---|")
    for package in args.packages:
        if totals[package]:
            print(f"| {package} | {totals[package]} | {exercised[package]} | "
                  f"{100 * exercised[package] / totals[package]:.0f}% |")
    print(f"| **all** | {total} | {done} | {100 * done / max(1, total):.0f}% |")
    print("\nnot exercised, by reason:\n")
    for why, count in reasons.most_common():
        print(f"- {count}: {why}")
    if args.verbose:
        print()
        for package, qualname, status in rows:
            print(f"{package}:{qualname}: {status}")
    findings = [f for e in entries for f in e.findings if f["code"] != "CG130"]
    print(f"\n{len(findings)} finding(s) on these libraries:")
    for f in findings:
        print(f"- {os.path.relpath(f['path'], os.path.dirname(os.path.dirname(f['path'])))}:{f['line']} "
              f"{f['code']} {f['message'][:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
