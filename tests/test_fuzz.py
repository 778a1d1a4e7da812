"""No input makes an exception escape: generated programs, and broken versions of real ones.

Through the engine (``lint_source``, what the CLI runs per file), the flake8 plugin class exactly
as flake8 calls it, and the CLI itself on files that cannot be read, decoded or parsed.
Example counts are bounded for CI; ``CG_LINT_EXAMPLES=2000`` runs a long campaign.
"""

from __future__ import annotations

import ast
import codecs
import os
import random
import subprocess
import sys
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cg_lint.config import Settings
from cg_lint.engine import FileResult, lint_source
from cg_lint.flake8_plugin import Plugin

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # from ast.parse of generated code
DATA = Path(__file__).parent / "data"
EXAMPLES = int(os.environ.get("CG_LINT_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])
ALL = Settings(select=("ALL",))
HEADER = "import tensorflow as tf\nfrom tensorflow import custom_gradient as cg\n"
DEFINITION = "\n\n@tf.custom_gradient\ndef _fuzz(x):\n    return x, lambda dy: dy\n"


def check_engine(source: str | bytes, path: str = "fuzz.py") -> FileResult:
    result = lint_source(source, path, ALL)
    assert isinstance(result, FileResult)
    if result.error is not None:
        line = result.error.one_line()
        assert "\n" not in line and "Traceback" not in line
        assert "internal error" not in line, line
    return result


def check_plugin(text: str, path: str = "fuzz.py") -> list[tuple]:
    """As flake8 does: a tree plugin runs only when ``ast.parse`` accepted the buffer."""
    lines = text.splitlines(keepends=True)
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = list(Plugin(tree, lines, path).run())
    for row, col, message, _kind in out:
        assert isinstance(row, int) and isinstance(col, int) and row >= 1 and col >= 0
        assert message.startswith("CG") and "\n" not in message
        assert not message.startswith("CG999"), message
    return out


def variants(code: str) -> list[str]:
    """The program, with a definition appended, and with a marker in place of an identifier."""
    out = [code, HEADER + code + DEFINITION]
    names = [n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)] if _parses(code) else []
    if names:
        out.append(HEADER + code.replace(names[0], "cg") + DEFINITION)
    return out


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
        return True
    except Exception:
        return False


@FUZZ
@given(hypothesmith.from_grammar())
def test_grammar_programs(code: str) -> None:
    for text in variants(code):
        check_engine(text)
        check_plugin(text)


@FUZZ
@given(hypothesmith.from_node())
def test_node_programs(code: str) -> None:
    for text in variants(code):
        check_engine(text)
        check_plugin(text)


# -- mutations of realistic custom-gradient sources -------------------------------------------

SOURCES = sorted(p.name for p in DATA.glob("cg_*.py"))


def mutate(data: bytes, rnd: random.Random) -> bytes:
    kind = rnd.choice(["delete lines", "truncate", "odd bytes", "latin-1", "utf-16", "bom", "invalid utf-8",
                       "cookie", "crlf", "cr", "tabs", "null", "dedent"])
    lines = data.splitlines(keepends=True)
    if kind == "delete lines":
        for _ in range(rnd.randint(1, 6)):
            if lines:
                del lines[rnd.randrange(len(lines))]
        return b"".join(lines)
    if kind == "truncate":
        return data[: rnd.randrange(len(data) + 1)]
    if kind == "odd bytes":
        at = rnd.randrange(len(data) + 1)
        return data[:at] + bytes(rnd.choice([0x00, 0x0C, 0x1B, 0x80, 0xFF, 0xE2, 0x85]) for _ in range(3)) + data[at:]
    if kind == "latin-1":
        return b"# -*- coding: latin-1 -*-\n" + data.replace(b"Custom", "Cust\u00f6m".encode("latin-1"))
    if kind == "utf-16":
        return data.decode("utf-8", "replace").encode("utf-16")
    if kind == "bom":
        return codecs.BOM_UTF8 + data
    if kind == "invalid utf-8":
        at = rnd.randrange(len(data) + 1)
        return data[:at] + b"\xc3\x28\xa0\xa1" + data[at:]
    if kind == "cookie":
        return b"# coding: no-such-codec\n" + data
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "cr":
        return data.replace(b"\n", b"\r")
    if kind == "tabs":
        return data.replace(b"    ", b"\t", rnd.randint(1, 50))
    if kind == "null":
        return data.replace(b"\n", b"\x00\n", 1)
    i = rnd.randrange(len(lines)) if lines else 0
    lines[i:i + 1] = [line.lstrip() for line in lines[i:i + 1]]
    return b"".join(lines)


def flake8_lines(data: bytes) -> list[str]:
    """How flake8 reads a file: tokenize's encoding detection, latin-1 when that fails."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        text = data.decode("latin-1")
    return text.removeprefix("\ufeff").splitlines(keepends=True)


@FUZZ
@given(st.sampled_from(SOURCES), st.randoms(use_true_random=False), st.integers(1, 3))
def test_broken_real_sources(name: str, rnd: random.Random, rounds: int) -> None:
    data = (DATA / name).read_bytes()
    for _ in range(rounds):
        data = mutate(data, rnd)
    check_engine(data, name)
    check_plugin("".join(flake8_lines(data)), name)


def test_every_mutation_kind_once() -> None:
    data = (DATA / "cg_ops.py").read_bytes()
    for seed in range(60):
        mutated = mutate(data, random.Random(seed))
        check_engine(mutated)
        check_plugin("".join(flake8_lines(mutated)))


# -- the CLI on bad input: one line per file, exit 2, never a traceback ---------------------------

BROKEN = {
    "syntax.py": b"import tensorflow as tf\n@tf.custom_gradient\ndef f(x:\n    return x\n",
    "undecodable.py": b"# custom_gradient\nx = '\xff\xfe\xfa'\n",
    "bad_cookie.py": b"# coding: no-such-codec\n# custom_gradient\n",
    "nulls.py": b"import tensorflow as tf\n\x00@tf.custom_gradient\n",
    "deep.py": b"import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n    return x, None\ny = f(" + b"1 + " * 3000 + b"1)\n",
    "truncated.py": b"import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n    def grad(dy",
}


def test_cli_reports_each_bad_file_on_one_line(tmp_path: Path) -> None:
    for name, data in BROKEN.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "fine.py").write_text("import tensorflow as tf\n@tf.custom_gradient\ndef f(x):\n    return x, lambda d: d\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert sorted(Path(line.split(":", 1)[0]).name for line in errors) == sorted(BROKEN)
    assert all("internal error" not in line for line in errors), errors


def test_cli_reports_unreadable_and_missing_paths(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    folder = tmp_path / "pkg.py"
    folder.mkdir()  # a folder named like a file
    proc = subprocess.run([sys.executable, "-m", "cg_lint", "--isolated", str(tmp_path / "missing.py"), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "missing.py: error: no such file or directory" in proc.stderr
