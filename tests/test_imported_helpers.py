"""Helpers imported from another module of the project (``from .ops import safe_norm``): the bug is
found where it flows, through leads (``Finding.lead``) that every front end answers on every run.

Each project below is written to a folder and linted for real: the CLI (cold and with a warm
result cache), flake8 in a subprocess, the language server with an unsaved buffer, and
``cg_lint.api.lint_source``. Every project is also run on TensorFlow, eagerly and under
``tf.function``: the INVALID ones fail as their finding says, the VALID ones run.

A line marked ``# expect: CGxxx`` in a module is where the finding must be; a project without one
must be quiet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lint_helpers import ROOT, run_cli

HEADER = "import tensorflow as tf\n\n"
STEP = """

@tf.function
def step(x):
    return entry(x)
"""

SAFE_NORM = HEADER + """
def safe_norm(t):
    n = tf.norm(t)
    if n > 0.0:
        return t / n
    return t
"""

MODEL_SAFE_NORM = HEADER + """from .ops import safe_norm


@tf.custom_gradient
def f(x):
    def grad(dy):
        return safe_norm(dy)  # expect: CG009
    return tf.identity(x), grad


def entry(x):
    return f(x)
""" + STEP

# name -> (files, module to import, extra sys.path folder, {"eager": ..., "graph": ...})
PROJECTS: dict[str, tuple[dict[str, str], str, str, dict[str, str]]] = {
    "invalid-relative-if": (
        {"pkg/__init__.py": "", "pkg/ops.py": SAFE_NORM, "pkg/model.py": MODEL_SAFE_NORM},
        "pkg.model", "", {"eager": "OK", "graph": "RAISES OperatorNotAllowedInGraphError"},
    ),
    "invalid-absolute-module-numpy": (
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": HEADER + "\ndef to_np(t):\n    return float(t.numpy().sum())\n",
            "pkg/model.py": HEADER + textwrap.dedent("""\
                from pkg import ops


                @tf.custom_gradient
                def f(x):
                    scale = ops.to_np(x)  # expect: CG010
                    return x * scale, lambda dy: dy * scale


                def entry(x):
                    return f(x)
                """) + STEP,
        },
        "pkg.model", "", {"eager": "OK", "graph": "RAISES AttributeError"},
    ),
    "invalid-reexported-by-init": (
        {
            "pkg/__init__.py": "from .ops import safe_norm\n",
            "pkg/ops.py": SAFE_NORM,
            "pkg/model.py": MODEL_SAFE_NORM.replace("from .ops import safe_norm", "from pkg import safe_norm"),
        },
        "pkg.model", "", {"eager": "OK", "graph": "RAISES OperatorNotAllowedInGraphError"},
    ),
    "invalid-src-layout-len": (
        {
            "src/pkg/__init__.py": "",
            "src/pkg/ops.py": HEADER + "\ndef halves(t):\n    return t[: len(t) // 2]\n",
            "src/pkg/model.py": HEADER + textwrap.dedent("""\
                from pkg.ops import halves


                @tf.custom_gradient
                def f(x):
                    def grad(dy):
                        head = halves(dy)  # expect: CG010
                        return tf.concat([head, head], 0)
                    return tf.identity(x), grad


                def entry(x):
                    return f(x)
                """) + STEP,
        },
        "pkg.model", "src", {"eager": "OK", "graph": "RAISES TypeError"},
    ),
    "invalid-count-through-helper": (
        {
            "pkg/__init__.py": "",
            "pkg/grads.py": "def mul_grads(dy, x, y):\n    return dy * y, dy * x, dy\n",
            "pkg/model.py": HEADER + textwrap.dedent("""\
                from .grads import mul_grads


                @tf.custom_gradient
                def mul(x, y):
                    def grad(dy):
                        return mul_grads(dy, x, y)  # expect: CG003
                    return x * y, grad


                def entry(x):
                    return mul(x, x + 1.0)
                """) + STEP,
        },
        "pkg.model", "", {"eager": "RAISES ValueError", "graph": "RAISES"},
    ),
    "valid-tricky-helpers": (
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": HEADER + textwrap.dedent("""\
                def shaped(t, flag=True):
                    if t is None or t.shape.rank == 0:  # static facts
                        return t
                    if flag:  # a Python value the call passes
                        t = tf.where(t > 0.0, t, 0.1 * t)
                    n = len(t.shape)  # static
                    return tf.reshape(t, [-1]) if n > 1 else t


                def mul_grads(dy, x, y):
                    return dy * y, dy * x


                def logged(t):
                    if tf.executing_eagerly():  # skipped when traced
                        print(float(t.numpy().sum()))
                    return t
                """),
            "pkg/model.py": HEADER + textwrap.dedent("""\
                from . import ops
                from .ops import shaped


                @tf.custom_gradient
                def f(x):
                    ops.logged(x)  # its .numpy() is under an executing_eagerly() test
                    def grad(dy):
                        return shaped(dy, flag=False)
                    return shaped(x), grad


                @tf.custom_gradient
                def mul(x, y):
                    def grad(dy):
                        return ops.mul_grads(dy, x, y)
                    return x * y, grad


                def entry(x):
                    return f(x) + mul(x, x + 1.0)
                """) + STEP,
        },
        "pkg.model", "", {"eager": "OK", "graph": "OK"},
    ),
    "valid-tf-function-helper": (
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": "import tensorflow as tf\n\n\n@tf.function  # AutoGraph converts it: its if becomes a tf.cond\n"
                          + SAFE_NORM.split("\n", 2)[2].lstrip("\n"),
            "pkg/model.py": MODEL_SAFE_NORM.replace("  # expect: CG009", ""),
        },
        "pkg.model", "", {"eager": "OK", "graph": "OK"},
    ),
}

# projects cg-lint cannot follow: quiet (TF behaviour is beside the point: the helper is unknown)
UNFOLLOWABLE: dict[str, dict[str, str]] = {
    "star-import": {
        "pkg/__init__.py": "",
        "pkg/ops.py": SAFE_NORM,
        "pkg/model.py": MODEL_SAFE_NORM.replace("from .ops import safe_norm", "from .ops import *")
                                       .replace("  # expect: CG009", ""),
    },
    "dynamic-import": {
        "pkg/__init__.py": "",
        "pkg/ops.py": SAFE_NORM,
        "pkg/model.py": MODEL_SAFE_NORM.replace("from .ops import safe_norm",
                                                "import importlib\nsafe_norm = importlib.import_module('pkg.ops').safe_norm")
                                       .replace("  # expect: CG009", ""),
    },
    "rebound-in-the-helper-module": {
        "pkg/__init__.py": "",
        "pkg/ops.py": SAFE_NORM + "\n\nsafe_norm = tf.function(safe_norm)\n",
        "pkg/model.py": MODEL_SAFE_NORM.replace("  # expect: CG009", ""),
    },
    "installed-library-in-a-virtualenv": {
        ".venv/lib/python3.12/site-packages/extlib/__init__.py": "",
        ".venv/lib/python3.12/site-packages/extlib/ops.py": SAFE_NORM,
        "pkg/__init__.py": "",
        "pkg/model.py": MODEL_SAFE_NORM.replace("from .ops import safe_norm", "from extlib.ops import safe_norm")
                                       .replace("  # expect: CG009", ""),
    },
    "helper-module-does-not-parse": {
        "pkg/__init__.py": "",
        "pkg/ops.py": SAFE_NORM + "\ndef broken(:\n",
        "pkg/model.py": MODEL_SAFE_NORM.replace("  # expect: CG009", ""),
    },
    "re-exports-in-a-circle": {
        "pkg/__init__.py": "from .a import safe_norm\n",
        "pkg/a.py": "from .b import safe_norm\n",
        "pkg/b.py": "from .a import safe_norm\n",
        "pkg/model.py": MODEL_SAFE_NORM.replace("from .ops import safe_norm", "from pkg import safe_norm")
                                       .replace("  # expect: CG009", ""),
    },
    "library-functions-are-not-helpers": {
        "pkg/__init__.py": "",
        "pkg/model.py": HEADER + textwrap.dedent("""\
            import math

            import numpy as np


            @tf.custom_gradient
            def f(x):
                y = tf.sin(x) * math.pi * np.float32(2.0)
                return y, lambda dy: dy * tf.cos(x) * math.pi * 2.0


            def entry(x):
                return f(x)
            """) + STEP,
    },
}


def write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def expected(files: dict[str, str]) -> list[tuple[str, int, str]]:
    out = []
    for name, text in files.items():
        for number, line in enumerate(text.splitlines(), 1):
            if "# expect: " in line:
                out.append((name, number, line.split("# expect: ")[1].strip()))
    return sorted(out)


def cli(root: Path, *args: str) -> list[dict]:
    proc = run_cli("--format", "json", *args, ".", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    assert b"Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def found(findings: list[dict], root: Path) -> list[tuple[str, int, str]]:
    return sorted((os.path.relpath(os.path.join(root, f["path"]), root).replace(os.sep, "/"), f["line"], f["code"])
                  for f in findings)


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_the_cli_finds_the_bug_where_it_flows(tmp_path: Path, name: str) -> None:
    files = PROJECTS[name][0]
    root = write(tmp_path, files)
    findings = cli(root, "--no-cache")
    assert found(findings, root) == expected(files)
    for f in findings:  # the message names the helper and the line in it
        assert "lead" not in f
        assert "helper '" in f["message"] and ".py, line " in f["message"]


@pytest.mark.parametrize("name", sorted(UNFOLLOWABLE))
def test_what_cannot_be_followed_stays_quiet(tmp_path: Path, name: str) -> None:
    root = write(tmp_path, UNFOLLOWABLE[name])
    assert cli(root, "--no-cache") == []


def test_the_helper_s_own_message_and_line(tmp_path: Path) -> None:
    root = write(tmp_path, PROJECTS["invalid-relative-if"][0])
    [finding] = cli(root, "--no-cache")
    assert finding["message"].startswith("helper 'safe_norm' (pkg/ops.py, line 6; called by grad of 'f' here) "
                                         "branches on a tensor with Python 'if' (n > 0.0): under tf.function")


def test_trace_context_still_decides(tmp_path: Path) -> None:
    """A lead's answer is a graph-mode finding like any other: ``never`` drops it."""
    root = write(tmp_path, PROJECTS["invalid-relative-if"][0])
    assert cli(root, "--no-cache", "--trace-context", "never") == []


def test_a_warm_result_cache_sees_the_helper_change(tmp_path: Path) -> None:
    files = PROJECTS["invalid-relative-if"][0]
    root = write(tmp_path, files)
    cache = str(tmp_path / "cache")
    model = root / "pkg" / "model.py"
    assert found(cli(root, "--cache-dir", cache, "pkg/model.py"), root) == expected(files)
    assert found(cli(root, "--cache-dir", cache, "pkg/model.py"), root) == expected(files)  # warm
    ops = root / "pkg" / "ops.py"
    ops.write_text(SAFE_NORM.replace("if n > 0.0:", "if n.shape.rank == 0:"), encoding="utf-8")
    assert model.read_text(encoding="utf-8") == files["pkg/model.py"]  # the model's entry is still a hit
    assert cli(root, "--cache-dir", cache, "pkg/model.py") == []
    ops.write_text(SAFE_NORM, encoding="utf-8")
    assert found(cli(root, "--cache-dir", cache, "pkg/model.py"), root) == expected(files)


def flake8(root: Path, *args: str) -> list[tuple[str, int, str]]:
    pytest.importorskip("flake8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "CG", *args, "."], cwd=root,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        path, number, _column, rest = line.split(":", 3)
        out.append((os.path.normpath(path).replace(os.sep, "/"), int(number), rest.split()[0]))
    return sorted(out)


@pytest.mark.parametrize("name", sorted(PROJECTS) + sorted(UNFOLLOWABLE))
def test_flake8_agrees_with_the_cli(tmp_path: Path, name: str) -> None:
    files = PROJECTS[name][0] if name in PROJECTS else UNFOLLOWABLE[name]
    root = write(tmp_path, files)
    assert flake8(root, "--exclude", ".venv") == found(cli(root, "--no-cache"), root) == expected(files)


def test_the_api_answers_leads(tmp_path: Path) -> None:
    from cg_lint.api import lint_source

    files = PROJECTS["invalid-count-through-helper"][0]
    root = write(tmp_path, files)
    path = str(root / "pkg" / "model.py")
    findings, error = lint_source(files["pkg/model.py"], path)
    assert error is None
    assert [(f.line, f.code, f.lead) for f in findings] == [(expected(files)[0][1], "CG003", None)]
    assert "through helper 'mul_grads' (pkg/grads.py, line 2)" in findings[0].message


def test_an_overlaid_buffer_of_the_helper_decides(tmp_path: Path) -> None:
    """What the language server does with an open, unsaved helper module: its buffer is read."""
    from cg_lint.answering import answer_leads
    from cg_lint.engine import lint_source
    from cg_lint.project import TraceContexts

    files = PROJECTS["invalid-relative-if"][0]
    root = write(tmp_path, files)
    path, ops = str(root / "pkg" / "model.py"), str(root / "pkg" / "ops.py")
    result = lint_source(files["pkg/model.py"], path)
    assert [f.code for f in answer_leads(result.findings, TraceContexts())] == ["CG009"]
    fixed = SAFE_NORM.replace("if n > 0.0:", "if n.shape.rank == 0:")
    assert answer_leads(result.findings, TraceContexts({ops: fixed})) == []


# --- TensorFlow: the INVALID projects fail as their findings say, the VALID ones run -------------

DRIVER = r"""
import importlib, json, sys
import tensorflow as tf

sys.path.insert(0, sys.argv[1])
entry = importlib.import_module(sys.argv[2]).entry


def gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(entry(x))
    return tape.gradient(y, x)


out = {}
for mode, fn in (("eager", gradient), ("graph", tf.function(gradient))):
    try:
        fn(tf.constant([1.0, 2.0, 3.0, 4.0]))
        out[mode] = "OK"
    except Exception as e:
        out[mode] = "RAISES " + type(e).__name__ + ": " + " ".join(str(e).split())[:300]
print(json.dumps(out))
"""


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_projects_behave_on_tensorflow_as_their_findings_say(tmp_path: Path, name: str) -> None:
    pytest.importorskip("tensorflow")
    files, module, extra, outcome = PROJECTS[name]
    root = write(tmp_path, files)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(root / extra), module], capture_output=True,
                          text=True, env=env, timeout=300, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    for mode, want in outcome.items():
        assert got[mode].startswith(want), (mode, got[mode])
    if name.startswith("valid-"):
        assert got == {"eager": "OK", "graph": "OK"}


def test_valid_helpers_are_asked_and_answered_no(tmp_path: Path) -> None:
    """The tricky VALID project is quiet because its leads are answered, not because none is left."""
    from cg_lint.answering import answer_leads
    from cg_lint.engine import lint_source
    from cg_lint.project import TraceContexts

    files = PROJECTS["valid-tricky-helpers"][0]
    root = write(tmp_path, files)
    result = lint_source(files["pkg/model.py"], str(root / "pkg" / "model.py"))
    leads = sorted({(f.code, json.loads(f.lead)["kind"]) for f in result.findings if f.lead})
    assert leads == [("CG003", "count"), ("CG009", "body"), ("CG010", "body")]
    assert answer_leads(result.findings, TraceContexts()) == []


def test_the_language_server_reads_an_unsaved_helper_buffer(tmp_path: Path) -> None:
    pytest.importorskip("pygls.lsp.client")
    from test_server import Editor, run

    files = PROJECTS["invalid-relative-if"][0]
    root = write(tmp_path / "proj", files)
    model, ops = (root / "pkg" / "model.py").as_uri(), (root / "pkg" / "ops.py").as_uri()
    fixed = SAFE_NORM.replace("if n > 0.0:", "if n.shape.rank == 0:")

    async def session(editor: Editor) -> None:
        editor.open(model, files["pkg/model.py"])
        [diagnostic] = await editor.diagnostics(model)
        assert diagnostic.code == "CG009" and diagnostic.range.start.line + 1 == expected(files)[0][1]
        editor.open(ops, SAFE_NORM)
        editor.change(ops, fixed)  # not saved: the file on disk still has the bug
        assert await editor.diagnostics(model) == []
        editor.change(ops, SAFE_NORM)
        assert [d.code for d in await editor.diagnostics(model)] == ["CG009"]

    run(session, tmp_path)


def test_the_output_in_the_trace_context_doc(tmp_path: Path) -> None:
    """docs/trace-context.md shows this project's finding (its message cut at ``...``)."""
    doc = (ROOT / "docs" / "trace-context.md").read_text(encoding="utf-8")
    [shown] = [line for line in doc.splitlines() if line.startswith("pkg/model.py:")]
    root = write(tmp_path, PROJECTS["invalid-relative-if"][0])
    proc = run_cli("--no-cache", "pkg/model.py", cwd=root)
    assert shown.endswith(" ...") and proc.stdout.decode().startswith(shown[:-len(" ...")])


def test_a_process_that_lives_across_saves_reads_the_saved_helper(tmp_path: Path) -> None:
    """One TraceContexts kept between runs (flake8's in an editor): the helper is read as saved."""
    from cg_lint.answering import answer_leads
    from cg_lint.engine import lint_source
    from cg_lint.project import TraceContexts

    files = PROJECTS["invalid-relative-if"][0]
    root = write(tmp_path, files)
    ops = root / "pkg" / "ops.py"
    leads = lint_source(files["pkg/model.py"], str(root / "pkg" / "model.py")).findings
    kept = TraceContexts()
    assert [f.code for f in answer_leads(leads, kept)] == ["CG009"]
    ops.write_text(SAFE_NORM.replace("if n > 0.0:", "if n.shape.rank == 0:"), encoding="utf-8")
    os.utime(ops, ns=(ops.stat().st_mtime_ns + 10**9,) * 2)
    assert answer_leads(leads, kept) == []
    ops.write_text(SAFE_NORM, encoding="utf-8")
    os.utime(ops, ns=(ops.stat().st_mtime_ns + 2 * 10**9,) * 2)
    assert [f.code for f in answer_leads(leads, kept)] == ["CG009"]
