"""The cg-lint command, run as users run it: in a subprocess, on real files."""

from __future__ import annotations

import json

from lint_helpers import run_cli

BAD = """\
import tensorflow as tf


@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w
    return x * w, grad
"""
GOOD = """\
import tensorflow as tf


@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w, dy * x
    return x * w, grad
"""
MESSAGE = "grad of 'weighted' returns 1 gradient but 'weighted' takes 2 inputs (x, w)"


def test_findings_exit_1_with_location_and_message(write, tmp_path):
    path = write("bad.py", BAD)
    proc = run_cli(str(path), "--format", "concise", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines() == [f"{path}:7:9: CG003 {MESSAGE}"]
    assert "Found 1 problem in 1 file" in proc.stderr.decode()


def test_text_format_shows_the_source_line_and_a_caret(write, tmp_path):
    path = write("bad.py", BAD)
    out = run_cli(str(path), cwd=tmp_path).stdout.decode().splitlines()
    assert out[1].endswith("|         return dy * w")
    assert out[2].index("^") == out[1].index("return")


def test_clean_exit_0(write, tmp_path):
    path = write("good.py", GOOD)
    proc = run_cli(str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""


def test_json_shape(write, tmp_path):
    path = write("bad.py", BAD)
    proc = run_cli(str(path), "--format", "json", cwd=tmp_path)
    assert proc.returncode == 1
    (item,) = json.loads(proc.stdout)
    assert {k: item[k] for k in ("path", "line", "column", "code", "message")} == {
        "path": str(path), "line": 7, "column": 9, "code": "CG003", "message": MESSAGE,
    }
    assert item["function"] == "weighted"
    assert proc.stderr == b""  # no summary in machine output


def test_folders_are_walked_and_virtualenvs_and_git_skipped(write, tmp_path):
    write("pkg/bad.py", BAD)
    write(".venv/lib/bad.py", BAD)
    write("env/pyvenv.cfg", "home = /usr\n")
    write("env/lib/bad.py", BAD)
    write(".git/hooks/bad.py", BAD)
    proc = run_cli(".", "--format", "json", cwd=tmp_path)
    assert [item["path"] for item in json.loads(proc.stdout)] == ["./pkg/bad.py"]


def test_noqa(write, tmp_path):
    lines = BAD.splitlines()
    for comment, silenced in (("# noqa", True), ("# noqa: CG003", True), ("# NOQA:CG0", True),
                              ("# noqa: CG001", False), ("# noqa: E501,CG003", True)):
        lines[6] = "        return dy * w  " + comment
        path = write("n.py", "\n".join(lines) + "\n")
        proc = run_cli(str(path), "--format", "json", cwd=tmp_path)
        assert (json.loads(proc.stdout) == []) is silenced, comment
    disabled = run_cli(str(path), "--format", "json", "--disable-noqa", cwd=tmp_path)
    lines[6] = "        return dy * w  # noqa"
    path = write("n.py", "\n".join(lines) + "\n")
    disabled = run_cli(str(path), "--format", "json", "--disable-noqa", cwd=tmp_path)
    assert [i["code"] for i in json.loads(disabled.stdout)] == ["CG003"]


def test_select_ignore_extend_select(write, tmp_path):
    path = write("bad.py", BAD)
    assert run_cli(str(path), "--select", "CG001", cwd=tmp_path).returncode == 0
    assert run_cli(str(path), "--ignore", "CG003", cwd=tmp_path).returncode == 0
    assert run_cli(str(path), "--ignore", "CG0", "--extend-select", "CG001", cwd=tmp_path).returncode == 0
    assert run_cli(str(path), "--ignore", "CG0", "--extend-select", "CG003", cwd=tmp_path).returncode == 1
    # the more specific code wins over a broader ignore, like ruff
    assert run_cli(str(path), "--select", "CG003", "--ignore", "CG", cwd=tmp_path).returncode == 1
    bad_code = run_cli(str(path), "--select", "E501", cwd=tmp_path)
    assert bad_code.returncode == 2
    assert b"'E501' is not a rule code" in bad_code.stderr and b"Traceback" not in bad_code.stderr


def test_config_from_the_nearest_pyproject(write, tmp_path):
    write("pyproject.toml", '[tool.cg_lint]\nignore = ["CG003"]\n')
    write("src/bad.py", BAD)
    assert run_cli("src", cwd=tmp_path).returncode == 0
    assert run_cli("src", "--isolated", cwd=tmp_path).returncode == 1
    write("pyproject.toml", '[tool.cg_lint]\nper-file-ignores = {"src/*.py" = ["CG003"]}\n')
    assert run_cli("src", cwd=tmp_path).returncode == 0
    write("pyproject.toml", '[tool.cg_lint]\nextend-exclude = ["src"]\n')
    assert run_cli(".", cwd=tmp_path).returncode == 0


def test_bad_config_is_one_clear_line(write, tmp_path):
    write("bad.py", BAD)
    write("pyproject.toml", '[tool.cg_lint]\nselct = ["CG003"]\n')
    proc = run_cli("bad.py", cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.decode().strip()
    assert "unknown key 'tool.cg_lint.selct'" in err and len(err.splitlines()) == 1
    write("pyproject.toml", '[tool.cg_lint\nselect = 1\n')
    proc = run_cli("bad.py", "--config", str(tmp_path / "pyproject.toml"), cwd=tmp_path)
    assert proc.returncode == 2 and b"invalid TOML" in proc.stderr and b"Traceback" not in proc.stderr


def test_stdin(tmp_path):
    proc = run_cli("-", "--stdin-filename", "pkg/layer.py", "--format", "concise", stdin=BAD, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("pkg/layer.py:7:9: CG003 ")
    assert run_cli("-", stdin=GOOD, cwd=tmp_path).returncode == 0


def test_force_exclude_applies_to_named_files(write, tmp_path):
    write("pyproject.toml", '[tool.cg_lint]\nextend-exclude = ["generated"]\n')
    path = write("generated/bad.py", BAD)
    assert run_cli(str(path), cwd=tmp_path).returncode == 1  # named explicitly: linted
    assert run_cli("--force-exclude", "generated/bad.py", cwd=tmp_path).returncode == 0


def test_broken_files_are_one_line_each_and_the_run_goes_on(write, tmp_path):
    write("a_unparsable.py", "import tensorflow as tf\n@tf.custom_gradient\ndef f(x:\n")
    write("b_latin1.py", b"import tensorflow as tf  # caf\xe9\n@tf.custom_gradient\ndef f(x): pass\n")
    write("c_bad.py", BAD)
    write("d_cookie.py", b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD.encode())
    proc = run_cli(".", "--format", "concise", "-j", "1", cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert "./a_unparsable.py:3:" in err and "cannot parse" in err
    assert "./b_latin1.py: error: cannot decode as utf-8 at byte 30" in err
    found = proc.stdout.decode().splitlines()
    assert [line.split(":")[0] for line in found] == ["./c_bad.py", "./d_cookie.py"]
    assert found[1].startswith("./d_cookie.py:9:9: CG003")


def test_a_syntax_error_counts_only_where_a_custom_gradient_can_be(write, tmp_path):
    """As the README says: cg-lint is not a syntax checker. A file that never names the marker is
    not read past the substring test (exit 0); one that does and does not parse is an error."""
    write("plain.py", "def f(x:\n")
    write("ok.py", "x = 1\n")
    assert run_cli(".", cwd=tmp_path).returncode == 0
    assert run_cli("plain.py", cwd=tmp_path).returncode == 0
    write("comment.py", "import tensorflow as tf  # custom_gradient one day\ndef f(x:\n")
    assert run_cli(".", cwd=tmp_path).returncode == 0  # named in a comment only: cannot define one
    write("used.py", "import tensorflow as tf\ncg = tf.custom_gradient\ndef f(x:\n")
    proc = run_cli(".", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines()[0] == "./used.py:3:6: error: cannot parse: '(' was never closed"


def test_missing_path(write, tmp_path):
    write("bad.py", BAD)
    proc = run_cli("nope.py", "bad.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert "nope.py: error: no such file or directory" in proc.stderr.decode()
    assert b"CG003" in proc.stdout


def test_usage_errors_exit_2_without_traceback(tmp_path):
    for args in (["--format", "xml", "."], ["--no-such-flag"], ["-", "x.py"]):
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, args
        assert proc.stderr.decode().startswith("cg-lint: error:") and b"Traceback" not in proc.stderr


def test_rule_command():
    listing = run_cli("rule", "--all").stdout.decode()
    assert "CG003  gradient-count-mismatch" in listing
    # every registered code, each on one line of its own: runtime-check's CG1xx and CG999 too
    from cg_lint.codes import CODES

    listed = [line.split()[0] for line in listing.splitlines() if line.startswith("CG")]
    assert listed == list(CODES)
    assert all(len(line) <= 140 for line in listing.splitlines()), listing
    doc = run_cli("rule", "cg003")
    assert doc.returncode == 0 and b"## Why is this bad?" in doc.stdout
    unknown = run_cli("rule", "CG777")
    assert unknown.returncode == 2 and b"unknown rule 'CG777'" in unknown.stderr


def test_exit_zero(write, tmp_path):
    path = write("bad.py", BAD)
    assert run_cli(str(path), "--exit-zero", cwd=tmp_path).returncode == 0


def test_parallel_and_serial_agree(write, tmp_path):
    for i in range(8):
        write(f"m{i}.py", BAD + "\n" * 20000)  # big enough to use the pool
    serial = run_cli(".", "--format", "json", "-j", "1", cwd=tmp_path)
    parallel = run_cli(".", "--format", "json", "-j", "2", cwd=tmp_path)
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert len(json.loads(serial.stdout)) == 8


def test_a_folder_named_on_the_command_line_is_linted_even_inside_an_excluded_one(write, tmp_path):
    write("venv-like/site-packages/pkg/bad.py", BAD)
    write("venv-like/site-packages/pkg/build/gen.py", BAD)  # below the named folder: excluded again
    proc = run_cli("venv-like/site-packages/pkg", "--format", "json", cwd=tmp_path)
    assert [item["path"] for item in json.loads(proc.stdout)] == ["venv-like/site-packages/pkg/bad.py"]
    assert run_cli("--force-exclude", "venv-like/site-packages/pkg", cwd=tmp_path).returncode == 0
