"""Inputs that break parsers, and the process pool: the run always finishes and reports each file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cg_lint import runner
from cg_lint.config import Settings
from cg_lint.engine import lint_source

ROOT = Path(__file__).resolve().parent.parent
HEAD = "import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x):\n    return x, lambda dy: dy\n\n"

# libcst's native parser overflows the C stack on these (a segfault, which no `except` catches)
DEEP = {
    "sum": "y = f(1" + " + 1" * 9000 + ")\n",
    "or_chain": "y = f(a" + " or b" * 9000 + ")\n",
    "concatenated": "y = f(" + " ".join(['"s"'] * 9000) + ")\n",
    "brackets": "y = f(" + "[" * 5000 + "]" * 5000 + ")\n",
    "unary": "y = f(" + "-" * 9000 + "1)\n",
    "attributes": "y = f(a" + ".b" * 9000 + ")\n",
    # inside blocks of a class the file keeps: the guard descends through statements too
    "in a method's blocks": ("class A:\n    def m(self, x):\n        if x:\n            for i in x:\n"
                             "                y = f(1" + " + 1" * 9000 + ")\n        return f(x)\n"),
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_deep_expressions_are_reported_not_crashed(tmp_path: Path) -> None:
    for name, body in DEEP.items():
        (tmp_path / f"{name}.py").write_text(HEAD + body)
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", str(tmp_path)],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    reported = {Path(line.split(":", 1)[0]).stem for line in proc.stderr.splitlines() if ": error: " in line}
    assert reported == set(DEEP)


def test_flake8_survives_deep_expressions(tmp_path: Path) -> None:
    # what CPython's own parser accepts under flake8 (deeper, flake8 fails before calling plugins)
    cases = {"sum": "y = f(1" + " + 1" * 1500 + ")\n", "or_chain": DEEP["or_chain"], "concatenated": DEEP["concatenated"]}
    for name, body in cases.items():
        (tmp_path / f"{name}.py").write_text(HEAD + body)
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", str(tmp_path)],
                          capture_output=True, text=True, env=_env(), timeout=300)
    assert "Traceback" not in proc.stderr
    # each file the depth limit turns away is one line (CG999), not a silent pass
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and len(lines) == len(cases), (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert all(": CG999 cg-lint not analysed: an expression nests more than" in line for line in lines), lines


def test_deep_but_unused_code_is_still_linted() -> None:
    # the deep statement is blanked by the reduction (nothing there concerns a custom gradient)
    source = HEAD + "TABLE = (" + " + ".join(["1"] * 3000) + ")\n\n@tf.custom_gradient\ndef g(x):\n    return x, x, None\n"
    result = lint_source(source, "deep.py")
    assert result.error is None and [f.code for f in result.findings] == ["CG001"]


def _tree(tmp_path: Path, n: int) -> list[str]:
    for i in range(n):
        (tmp_path / f"m{i}.py").write_text(HEAD.replace("def f", f"def f{i}") + f"z = f{i}(1.0, 2.0)\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    return [str(tmp_path)]


def _summary(results) -> list[tuple]:
    return sorted((r.path, tuple(r.findings), r.error) for r in results)


def test_pool_and_serial_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _tree(tmp_path, 12)
    serial = _summary(runner.lint_paths(paths, Settings(exclude=()), jobs=1))
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    pooled = _summary(runner.lint_paths(paths, Settings(exclude=()), jobs=2))
    assert pooled == serial and len(serial) == 12
    assert all(findings for _, findings, _ in serial)


def _die_on_m3(args):
    if args[0].endswith("m3.py"):
        os._exit(9)  # what a native crash looks like from the parent
    from cg_lint.engine import lint_source

    return lint_source(args[1], args[0], args[2])


@pytest.mark.skipif(sys.platform != "linux", reason="the patched worker reaches the pool by fork")
def test_a_dying_worker_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _tree(tmp_path, 8)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "_lint_data", _die_on_m3)
    results = list(runner.lint_paths(paths, Settings(exclude=()), jobs=2))
    assert len(results) == 8
    dead = [r for r in results if r.error is not None]
    assert any(r.path.endswith("m3.py") for r in dead)
    assert all("worker process" in r.error.message for r in dead)


def test_flake8_plugin_prefilter_honours_configured_names(tmp_path: Path) -> None:
    source = tmp_path / "wrapped.py"
    source.write_text("from mylib.wrappers import my_cg\n\n@my_cg\ndef f(x):\n    return x, x, None\n")
    base = [sys.executable, "-m", "flake8", "--isolated", "--select", "CG", str(source)]
    plain = subprocess.run(base, capture_output=True, text=True, env=_env(), timeout=120)
    assert plain.returncode == 0 and plain.stdout == ""
    configured = subprocess.run([*base, "--cg-decorators", "mylib.wrappers.my_cg"],
                                capture_output=True, text=True, env=_env(), timeout=120)
    assert configured.returncode == 1 and "CG001" in configured.stdout, configured.stdout + configured.stderr


def test_the_collector_is_left_as_it_was_found(tmp_path: Path) -> None:
    """Linting holds the cyclic collector per file; a host process (flake8) must get it back as it
    was, whether the file linted, failed to parse or hit an internal limit."""
    import gc

    sources = [HEAD + "y = 1\n", HEAD + "def broken(:\n", HEAD + DEEP["in a method's blocks"]]
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            for source in sources:
                lint_source(source, "x.py", Settings())
                assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# names bound from themselves, then used as rules inspect them (found on sympy by the stress crawl:
# `x = x[1:]` then `for r in x` recursed until the interpreter's limit and lost the whole file)
REBINDS = ["x = x[1:]", "x = x + 1.0", "x = tf.abs(x)", "x = [x]", "x = (x, x)", "x, y = y, x", "x = x.T",
           "x = -x", "x = x if y else x[0]", "x = (x := x[0])", "x = x * x[0]", "y = x\nx = y[1:]",
           "x = y[0]\ny = x[1:]", "x = list(x)", "x = [v for v in x]", "x = x[0], x[1]", "x, = x",
           "x = len(x)", "x = x or y", "x = not x", "x = x[::-1][0]", "y = (x, y)[0][1:]\nx = y"]
USES = ["for r in x:\n    pass", "if x:\n    pass", "z = len(x)", "z = float(x)", "z = x.numpy()",
        "z = tf.cond(x > 0, lambda: x, lambda: y)", "while x:\n    break", "z = range(x)",
        "z = [r for r in x]", "z = np.sum(x)", "assert x"]


def _indent(code: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in code.splitlines())


@pytest.mark.parametrize("in_grad", [False, True], ids=["forward", "grad"])
def test_names_rebound_from_themselves_are_analysed(in_grad: bool) -> None:
    settings = Settings(select=("ALL",))
    lost = []
    for rebind in REBINDS:
        for use in USES:
            body = rebind + "\n" + use
            if in_grad:
                inner = "def grad(dy):\n" + _indent(body + "\nreturn dy, dy", 4) + "return x, grad"
            else:
                inner = body + "\nreturn x, lambda dy: (dy, dy)"
            source = ("import numpy as np\nimport tensorflow as tf\n\n@tf.custom_gradient\ndef f(x, y):\n"
                      + _indent(inner, 4))
            result = lint_source(source, "rebound.py", settings)
            if result.error is not None or not result.parsed:
                lost.append((rebind, use, result.error))
    assert lost == []
