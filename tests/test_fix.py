"""Autofix: every rule's fixes applied and re-linted, the CLI's --fix/--diff, and TensorFlow proof."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from cg_lint.engine import lint_source
from cg_lint.findings import Edit, Fix
from cg_lint.fixes import apply_fixes, applicable, fix_source, unified_diff
from cg_lint.rules import ALL_RULES
from lint_helpers import ROOT, run_cli

BROKEN = """\
import tensorflow as tf


@tf.custom_gradient
def split_scale(x):
    def grad(dlow, dhigh):
        return dlow * 2.0 + dhigh * 3.0
    return x * 2.0, x * 3.0, grad
"""
FIXED = BROKEN.replace("return x * 2.0, x * 3.0, grad", "return (x * 2.0, x * 3.0), grad")
UNFIXABLE = """\


@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w
    return x * w, grad
"""


def _fixable_examples():
    for rule in ALL_RULES:
        for i, example in enumerate(rule.INVALID):
            source = textwrap.dedent(example)
            if any(f.fix for f in lint_source(source, "example.py").findings if f.code == rule.code):
                yield pytest.param(rule, source, id=f"{rule.code}-invalid-{i}")


FIXABLE = list(_fixable_examples())


# --- every fix of every rule -----------------------------------------------------------------

@pytest.mark.parametrize("rule,source", FIXABLE)
def test_every_fix_removes_its_finding_and_keeps_the_file_valid(rule, source):
    before = [f for f in lint_source(source, "example.py").findings if f.code == rule.code]
    outcome = fix_source(source, "example.py", unsafe=True)
    assert outcome.error is None and outcome.converged
    assert outcome.changed and outcome.fixed == sum(1 for f in before if f.fix)
    cst.parse_module(outcome.text)
    ast.parse(outcome.text)
    after = [f for f in lint_source(outcome.text, "example.py").findings if f.code == rule.code]
    assert len(after) == len(before) - outcome.fixed
    assert not any(f.fix for f in after)
    # nothing else got worse: no finding of another rule appeared
    def others(text: str) -> set[tuple[str, str]]:
        return {(f.code, f.message) for f in lint_source(text, "example.py").findings if f.code != rule.code}

    assert others(outcome.text) <= others(source)


def test_fixes_exist_and_rules_declare_them():
    assert FIXABLE, "at least one rule example must carry a fix"
    with_fixes = {p.values[0] for p in FIXABLE}
    for rule in ALL_RULES:
        assert rule.fixable == (rule in with_fixes), (
            f"{rule.code}: 'fixable = True' and an INVALID example whose finding carries a Fix go together")


def test_cg001_fix_is_exactly_the_wrapped_tuple():
    outcome = fix_source(BROKEN, "m.py")
    assert outcome.text == FIXED and outcome.fixed == 1 and outcome.remaining == []


def test_two_fixes_in_one_function_are_both_applied():
    source = BROKEN.replace("    return x * 2.0, x * 3.0, grad",
                            "    if x.shape.rank == 0:\n        return x, x, grad\n    return x * 2.0, x * 3.0, grad")
    outcome = fix_source(source, "m.py")
    assert "return (x, x), grad" in outcome.text and "return (x * 2.0, x * 3.0), grad" in outcome.text
    assert outcome.fixed == 2 and outcome.remaining == []


def test_noqa_findings_are_not_fixed():
    source = BROKEN.replace("grad\n", "grad  # noqa: CG001\n")
    assert fix_source(source, "m.py").text == source


def test_edit_helpers_locate_nodes_like_the_rules_do():
    from cg_lint.config import Settings
    from cg_lint.engine import build_context
    from cg_lint.prefilter.prepared import Prepared
    from cg_lint.rules.edits import insert_after, insert_before, node_code, replace_node

    ctx = build_context(Prepared(BROKEN, cst.parse_module(BROKEN)), "m.py", Settings())
    (record,) = ctx.records
    value = record.returns[0].site.value
    rule_fix = lint_source(BROKEN, "m.py").findings[0].fix
    # CG001 inserts around the outputs, so nothing between them is regenerated
    assert rule_fix.edits == (insert_before(ctx.index, value.elements[0], "("),
                              insert_after(ctx.index, value.elements[1], ")"))
    assert apply_fixes(BROKEN, [Fix("r", (replace_node(ctx.index, value, "(x * 2.0, x * 3.0), grad"),))])[0] == \
        apply_fixes(BROKEN, [rule_fix])[0]
    assert node_code(value) == "x * 2.0, x * 3.0, grad"
    fixes = [Fix("b", (insert_before(ctx.index, value, "("),)), Fix("a", (insert_after(ctx.index, value, ")"),))]
    assert apply_fixes(BROKEN, fixes)[0] == BROKEN.replace("return x * 2.0, x * 3.0, grad", "return (x * 2.0, x * 3.0, grad)")


# --- applying edits --------------------------------------------------------------------------

def test_overlapping_fixes_apply_the_first_and_skip_the_other():
    text = "abcdef\n"
    first = Fix("a", (Edit(1, 2, 1, 5, "X"),))
    overlapping = Fix("b", (Edit(1, 4, 1, 6, "Y"),))
    elsewhere = Fix("c", (Edit(1, 6, 1, 7, "Z"),))
    new, applied, skipped = apply_fixes(text, [overlapping, elsewhere, first])
    assert new == "aXeZ\n" and applied == [first, elsewhere] and skipped == [overlapping]


def test_insertions_multiline_edits_and_bad_positions():
    text = "one\r\ntwo\r\nthree\r\n"
    insert = Fix("i", (Edit(1, 1, 1, 1, ">"),))
    across = Fix("m", (Edit(2, 2, 3, 3, "W\nR"),))  # replacement newlines follow the file (CRLF)
    outside = Fix("o", (Edit(9, 1, 9, 2, "?"),))
    new, applied, skipped = apply_fixes(text, [insert, across, outside])
    assert new == ">one\r\ntW\r\nRree\r\n"
    assert applied == [insert, across] and skipped == [outside]
    same_spot = Fix("j", (Edit(1, 1, 1, 1, "<"),))
    assert apply_fixes(text, [insert, same_spot])[2] == [same_spot]
    inside = Fix("k", (Edit(1, 2, 1, 2, "|"),))
    assert apply_fixes(text, [Fix("r", (Edit(1, 1, 1, 4, "ONE"),)), inside])[2] == [inside]


def test_only_safe_fixes_unless_unsafe_is_asked_for():
    from cg_lint.findings import Finding

    safe = Finding("m.py", 1, 1, "CG001", "m", fix=Fix("s", ()))
    unsafe = Finding("m.py", 2, 1, "CG004", "m", fix=Fix("u", (), safe=False))
    plain = Finding("m.py", 3, 1, "CG003", "m")
    assert applicable([safe, unsafe, plain]) == [safe]
    assert applicable([safe, unsafe, plain], unsafe=True) == [safe, unsafe]


def test_unified_diff_marks_a_missing_final_newline():
    assert unified_diff("m.py", "a\nb", "a\nc").endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


# --- the CLI ---------------------------------------------------------------------------------

def test_diff_prints_a_unified_diff_and_writes_nothing(write, tmp_path):
    path = write("m.py", BROKEN)
    proc = run_cli("m.py", "--diff", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode() == (
        "--- m.py\n+++ m.py\n@@ -5,4 +5,4 @@\n def split_scale(x):\n     def grad(dlow, dhigh):\n"
        "         return dlow * 2.0 + dhigh * 3.0\n-    return x * 2.0, x * 3.0, grad\n"
        "+    return (x * 2.0, x * 3.0), grad\n")
    assert proc.stderr.decode() == "Would fix 1 problem, 0 remaining\n"
    assert path.read_text() == BROKEN
    assert run_cli("m.py", "--diff", "--exit-zero", "-q", cwd=tmp_path).returncode == 0


def test_diff_without_fixes_exits_0_silently(write, tmp_path):
    write("m.py", "import tensorflow as tf\n" + UNFIXABLE)
    proc = run_cli("m.py", "--diff", "-q", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def test_fix_writes_the_file_and_exits_0_when_nothing_remains(write, tmp_path):
    path = write("m.py", BROKEN)
    proc = run_cli("m.py", "--fix", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.decode() == "Fixed 1 problem, 0 remaining\n"
    assert path.read_text() == FIXED


def test_fix_reports_what_remains_and_exits_1(write, tmp_path):
    path = write("m.py", BROKEN + UNFIXABLE)
    other = write("other.py", "import tensorflow as tf\n" + UNFIXABLE)
    proc = run_cli(".", "--fix", "--format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert [line.split(": CG")[0] for line in proc.stdout.decode().splitlines()] == ["./m.py:14:9", "./other.py:7:9"]
    assert proc.stderr.decode() == "Fixed 1 problem, 2 remaining\n"
    assert path.read_text() == FIXED + UNFIXABLE
    assert other.read_text() == "import tensorflow as tf\n" + UNFIXABLE


def test_fix_json_output_lists_the_remaining_findings(write, tmp_path):
    write("m.py", BROKEN + UNFIXABLE)
    proc = run_cli("m.py", "--fix", "--format", "json", cwd=tmp_path)
    assert [item["code"] for item in json.loads(proc.stdout)] == ["CG003"]
    assert proc.stderr == b""


def test_second_fix_changes_nothing(write, tmp_path):
    path = write("m.py", BROKEN)
    run_cli("m.py", "--fix", cwd=tmp_path)
    once = path.read_bytes()
    proc = run_cli("m.py", "--fix", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.decode() == "Fixed 0 problems, 0 remaining\n"
    assert path.read_bytes() == once
    assert run_cli("m.py", "--diff", cwd=tmp_path).stdout == b""


def test_fix_keeps_crlf_and_a_latin1_cookie(write, tmp_path):
    source = ("# -*- coding: latin-1 -*-\n# caf\u00e9 na\u00efve\n" + BROKEN).replace("\n", "\r\n")
    path = write("m.py", source.encode("latin-1"))
    proc = run_cli("m.py", "--fix", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = path.read_bytes()
    expected = ("# -*- coding: latin-1 -*-\n# caf\u00e9 na\u00efve\n" + FIXED).replace("\n", "\r\n").encode("latin-1")
    assert data == expected
    assert b"caf\xe9" in data and data.count(b"\r\n") == data.count(b"\n")


def test_fix_keeps_a_utf8_bom_and_mixed_newlines_elsewhere(write, tmp_path):
    source = "\ufeff" + BROKEN.replace("import tensorflow as tf\n", "import tensorflow as tf  # \u00fc\r\n")
    path = write("m.py", source.encode("utf-8"))
    assert run_cli("m.py", "--fix", cwd=tmp_path).returncode == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"# \xc3\xbc\r\n" in data
    assert data.decode("utf-8-sig") == source[1:].replace("return x * 2.0, x * 3.0, grad", "return (x * 2.0, x * 3.0), grad")


def test_fix_on_stdin_prints_the_fixed_source(tmp_path):
    proc = run_cli("-", "--fix", "--stdin-filename", "m.py", stdin=BROKEN + UNFIXABLE, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode() == FIXED + UNFIXABLE
    err = proc.stderr.decode()
    assert "m.py:14:9: CG003" in err and err.endswith("Fixed 1 problem, 1 remaining\n")
    clean = run_cli("-", "--fix", stdin=BROKEN, cwd=tmp_path)
    assert (clean.returncode, clean.stdout.decode()) == (0, FIXED)


def test_fix_on_stdin_echoes_source_it_cannot_parse(tmp_path):
    bad = "import tensorflow as tf\n@tf.custom_gradient\ndef f(:\n"
    proc = run_cli("-", "--fix", stdin=bad, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout.decode() == bad
    assert proc.stderr.decode().count("\n") == 1 and "cannot parse" in proc.stderr.decode()


def test_diff_on_stdin(tmp_path):
    proc = run_cli("-", "--diff", "--stdin-filename", "m.py", stdin=BROKEN, cwd=tmp_path)
    assert proc.returncode == 1
    assert "-    return x * 2.0, x * 3.0, grad\n+    return (x * 2.0, x * 3.0), grad\n" in proc.stdout.decode()


def test_fix_leaves_unparsable_files_alone_and_exits_2(write, tmp_path):
    write("ok.py", BROKEN)
    bad = write("bad.py", "import tensorflow as tf\n@tf.custom_gradient\ndef f(:\n")
    proc = run_cli(".", "--fix", cwd=tmp_path)
    assert proc.returncode == 2
    assert "bad.py:3" in proc.stderr.decode() and "cannot parse" in proc.stderr.decode()
    assert (tmp_path / "ok.py").read_text() == FIXED
    assert bad.read_text().endswith("def f(:\n")


def test_unsafe_fixes_flag_is_accepted_and_applies_safe_fixes_too(write, tmp_path):
    path = write("m.py", BROKEN)
    assert run_cli("m.py", "--fix", "--unsafe-fixes", cwd=tmp_path).returncode == 0
    assert path.read_text() == FIXED


# --- TensorFlow: the fixed code runs and its gradients are right ------------------------------

GRADIENTS = r"""
import importlib.util, json, sys
import tensorflow as tf

spec = importlib.util.spec_from_file_location("fixed", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

def reference(x):  # the same forward without a custom gradient: autodiff is the ground truth
    return x * 2.0, x * 3.0

def gradient(fn, x, traced):
    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.add_n([tf.reduce_sum(o) for o in tf.nest.flatten(fn(x))])
        return tape.gradient(loss, x)
    return (tf.function(run)() if traced else run()).numpy().tolist()

x = tf.constant([1.0, -2.0, 3.0])
out = {}
for name, fn in (("fixed", module.split_scale), ("reference", reference)):
    for traced in (False, True):
        try:
            out[f"{name}-{'traced' if traced else 'eager'}"] = gradient(fn, x, traced)
        except Exception as e:
            out[f"{name}-{'traced' if traced else 'eager'}"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


def _tf_gradients(tmp_path: Path, module: Path) -> dict:
    script = tmp_path / "gradients.py"
    script.write_text(GRADIENTS, encoding="utf-8")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, str(script), str(module)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.tf
def test_fixed_example_has_correct_gradients_eagerly_and_traced(write, tmp_path):
    pytest.importorskip("tensorflow")
    module = write("split.py", BROKEN)
    before = _tf_gradients(tmp_path, module)
    assert "too many values to unpack" in before["fixed-eager"]  # the defect, for real
    assert run_cli("split.py", "--fix", cwd=tmp_path).returncode == 0
    after = _tf_gradients(tmp_path, module)
    assert after["reference-eager"] == after["reference-traced"] == [5.0, 5.0, 5.0]
    assert after["fixed-eager"] == after["fixed-traced"] == after["reference-eager"]


@pytest.mark.tf
def test_fixed_bundled_example_runs_in_both_modes(tmp_path):
    tf = pytest.importorskip("tensorflow")
    copy = tmp_path / "arity.py"
    copy.write_bytes((ROOT / "examples" / "arity.py").read_bytes())
    proc = run_cli("arity.py", "--fix", "--format", "concise", cwd=tmp_path)
    assert proc.returncode == 1  # CG002 and CG003 have no automatic fix
    assert [line.split()[1] for line in proc.stdout.decode().splitlines()] == ["CG003", "CG002"]
    import importlib.util

    spec = importlib.util.spec_from_file_location("arity_fixed", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = tf.constant([1.0, 2.0, 3.0, 4.0])

    def run():
        with tf.GradientTape() as tape:
            tape.watch(x)
            mean, spread = module.mean_and_spread(x)
            loss = mean + spread
        return tape.gradient(loss, x)

    # grad's own formula: dmean / n + dspread * (x == max)
    for g in (run(), tf.function(run)()):
        assert g.numpy().tolist() == pytest.approx([0.25, 0.25, 0.25, 1.25])


# --- fixes keep what is inside the edited code --------------------------------------------------

FAITHFUL = {
    # CG006: comments inside the tuple, and a comma a comment follows, stay; brackets replace parens
    "        return dy * w, (  # variable grads\n            dy * x,  # the weight\n        )\n":
        "        return dy * w, [  # variable grads\n            dy * x,  # the weight\n        ]\n",
    "        return dy * w, (dy * x, )\n": "        return dy * w, [dy * x]\n",
    "        return dy * w, (dy * x,)\n": "        return dy * w, [dy * x]\n",
}
VARIABLE_GRAD = ("import tensorflow as tf\n\nw = tf.Variable(1.0)\n\n\n@tf.custom_gradient\ndef f(x):\n"
                 "    y = x * w\n    def grad(dy, variables=None):\n{ret}    return y, grad\n")


@pytest.mark.parametrize("before", FAITHFUL)
def test_list_fix_keeps_comments_and_layout(before: str) -> None:
    outcome = fix_source(VARIABLE_GRAD.format(ret=before), "m.py")
    assert outcome.error is None and outcome.fixed == 1
    assert outcome.text == VARIABLE_GRAD.format(ret=FAITHFUL[before])


def test_wrap_fix_keeps_continuations_and_tabs() -> None:
    source = ("import tensorflow as tf\n\n@tf.custom_gradient\ndef f(x):\n\tdef grad(da, db):\n\t\treturn da\n"
              "\treturn x, \\\n\t\tx * 2.0,\tgrad  # done\n")
    outcome = fix_source(source, "m.py")
    assert outcome.text == source.replace("return x, \\\n\t\tx * 2.0,\tgrad", "return (x, \\\n\t\tx * 2.0),\tgrad")
