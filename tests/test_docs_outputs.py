"""Every command output shown in README.md and docs/ is what the command prints today.

A fenced block whose first line starts with ``$ `` is a session: each ``$ command`` is run (in the
order of the page, in a scratch copy of the examples, so ``--fix`` edits nothing tracked) and what
it prints, stdout and stderr as a terminal interleaves them, must equal the lines below it. A line
holding only ``...`` stands for any number of lines. A block with one command and no output takes
its output from the fenced block right after it (``--format sarif`` then a ``json`` block). A
``python`` block with ``title="NAME"`` is written to NAME first, for the commands that read it.
``python -m pip install ... &&`` is dropped (the code under test is this checkout), and ``/tmp/``
is a folder of the scratch copy. The rule pages in docs/rules/ are generated (``cg_lint.docs``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)(?P<info>.*)$")
INSTALL = re.compile(r"^python -m pip install \S+(?: \S+)*? && ")


@dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    info: str
    lines: list[str]
    end: int  # line of the closing fence
    indent: str = ""


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent = match.group("indent")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        found.append(Block(path.name, i + 1, match.group("lang"), match.group("info").strip(), body, j + 1, indent))
        i = j + 1
    return found


@dataclass
class Session:
    block: Block
    command: str
    expected: list[str]
    first: int = 0  # the page's line (1-based) of the first expected line
    holder: Block | None = None  # the block the expected lines are in

def sessions(path: Path) -> list[Session | Block]:
    """The page's sessions in order, with the file blocks (``title="..."``) they may need."""
    out: list[Session | Block] = []
    page = blocks(path)
    for k, block in enumerate(page):
        if 'title="' in block.info:
            out.append(block)
            continue
        if not block.lines or not block.lines[0].startswith("$ "):
            continue
        current: Session | None = None
        for n, line in enumerate(block.lines):
            if line.startswith("$ "):
                current = Session(block, line[2:], [], block.line + n + 2, block)
                out.append(current)
            elif current is not None:
                current.expected.append(line)
        last = out[-1]
        assert isinstance(last, Session)
        follower = page[k + 1] if k + 1 < len(page) else None
        if len(block.lines) == 1 and follower is not None and follower.line == block.end + 1:
            last.expected, last.first, last.holder = list(follower.lines), follower.line + 1, follower
    for item in out:
        if isinstance(item, Session):
            while item.expected and not item.expected[-1].strip():
                item.expected.pop()
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """``...`` lines match any run of lines; trailing spaces do not count."""
    expected = [e.rstrip() for e in expected]
    actual = [a.rstrip() for a in actual]

    def at(i: int, j: int) -> bool:
        if i == len(expected):
            return j == len(actual)
        if expected[i] == "...":
            return any(at(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and expected[i] == actual[j] and at(i + 1, j + 1)

    return at(0, 0)


def scratch_copy(tmp: Path) -> Path:
    work = tmp / "repo"
    shutil.copytree(ROOT / "examples", work / "examples")
    # runtime-check's pages also show runs over the test fixtures (a quantized Keras layer)
    shutil.copytree(ROOT / "tests" / "runtime" / "fixtures", work / "tests" / "runtime" / "fixtures")
    shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
    (work / "tmp").mkdir()
    return work


def run(command: str, cwd: Path, timeout: float) -> list[str]:
    command = INSTALL.sub("", command).replace("/tmp/", f"{cwd}/tmp/")
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3", NO_COLOR="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(command, shell=True, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return proc.stdout.replace(f"{cwd}/tmp/", "/tmp/").splitlines()


def _runtime(item: Session | Block) -> bool:
    """runtime-check sessions import TensorFlow and run the examples: a test of their own (slow)."""
    return isinstance(item, Session) and "runtime-check" in item.command


PARAMS = [
    pytest.param(path, runtime, id=f"{path.name}-{'runtime' if runtime else 'lint'}",
                 marks=[pytest.mark.slow, pytest.mark.tf] if runtime else [])
    for path in PAGES for runtime in (False, True)
    if any(isinstance(s, Session) and _runtime(s) == runtime for s in sessions(path))
]


@pytest.mark.parametrize("path, runtime", PARAMS)
def test_shown_output_is_real(path: Path, runtime: bool, tmp_path: Path) -> None:
    work = scratch_copy(tmp_path)
    wrong = []
    for item in sessions(path):
        if isinstance(item, Block):
            name = re.search(r'title="([^"]+)"', item.info).group(1)  # type: ignore[union-attr]
            (work / name).write_text("\n".join(item.lines) + "\n", encoding="utf-8")
            continue
        if not item.expected or _runtime(item) != runtime:
            continue  # nothing shown, nothing to hold to; or the other test's
        actual = run(item.command, work, timeout=600)
        if not matches(item.expected, actual):
            wrong.append(f"{item.block.page}:{item.block.line}: $ {item.command}\n--- shown\n"
                         + "\n".join(item.expected) + "\n--- printed\n" + "\n".join(actual))
    assert not wrong, "\n\n".join(wrong)


def test_every_output_block_is_a_session_or_a_file() -> None:
    """A console block that does not start with ``$ `` would show output nothing checks."""
    loose = [f"{b.page}:{b.line}" for p in PAGES for b in blocks(p)
             if b.lang == "console" and (not b.lines or not b.lines[0].startswith("$ "))]
    assert loose == []


def test_relative_links_point_into_the_repository() -> None:
    missing = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                missing.append(f"{page.name}: {target}")
    assert missing == []


def test_the_command_line_synopsis_is_the_parsers() -> None:
    """README's synopsis of `cg-lint` is hand-written: every option it names is one `--help` lists,
    and the other way round (aliases and -h aside)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^```text\n(cg-lint \[PATH.*?)^```", readme, re.S | re.M)
    assert found is not None
    option = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    helped = subprocess.run([sys.executable, "-m", "cg_lint", "--help"], capture_output=True, text=True, env=env)
    parser = set(option.findall(helped.stdout)) - {"-h", "--help", "--output-format"}
    assert set(option.findall(found.group(1))) == parser


def test_the_matcher_can_fail() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"]) and matches(["a", "..."], ["a"])
    assert not matches(["a", "...", "d"], ["a", "b"]) and not matches(["a"], ["a", "b"])


def update(paths: list[Path]) -> None:
    """Rewrite the shown output of every session that no longer matches (``...`` kept where it still
    matches): ``python tests/test_docs_outputs.py [PAGE ...]``."""
    import tempfile

    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            work = scratch_copy(Path(tmp))
            edits: list[tuple[int, int, list[str], str]] = []
            for item in sessions(path):
                if isinstance(item, Block):
                    name = re.search(r'title="([^"]+)"', item.info).group(1)  # type: ignore[union-attr]
                    (work / name).write_text("\n".join(item.lines) + "\n", encoding="utf-8")
                    continue
                actual = run(item.command, work, timeout=600)
                if item.expected and not matches(item.expected, actual):
                    indent = item.holder.indent if item.holder is not None else ""
                    edits.append((item.first, len(item.expected), actual, indent))
                    print(f"{path.name}:{item.block.line}: $ {item.command}: updated")
        lines = path.read_text(encoding="utf-8").splitlines()
        for first, count, actual, indent in sorted(edits, reverse=True):
            lines[first - 1:first - 1 + count] = [(indent + a).rstrip() if a else "" for a in actual]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    update([Path(p).resolve() for p in sys.argv[1:]] or PAGES)
