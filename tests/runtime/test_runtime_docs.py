"""Every runtime-check output shown in README.md and docs/runtime-check.md is what a run prints now."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(?:console|text)?\n\$ (?:[^\n]*&& )?runtime-check ([^\n]*)\n(.*?)```", re.DOTALL)


def shown_runs() -> list[tuple[str, str, str]]:
    runs = []
    for doc in ("README.md", "docs/runtime-check.md"):
        for match in BLOCK.finditer((ROOT / doc).read_text(encoding="utf-8")):
            runs.append((doc, match.group(1), match.group(2).rstrip("\n")))
    return runs


def test_the_docs_show_runtime_check_output():
    assert {doc for doc, _, _ in shown_runs()} == {"README.md", "docs/runtime-check.md"}


@pytest.fixture(scope="module")
def outputs(cli):
    """One run per distinct command shown."""
    return {args: cli(*shlex.split(args), cwd=ROOT) for args in {a for _, a, _ in shown_runs()}}


@pytest.mark.parametrize("doc, args, shown", shown_runs(), ids=lambda v: v if len(v) < 40 else None)
def test_shown_output_is_real(outputs, doc, args, shown):
    completed = outputs[args]
    assert completed.stderr.strip() == "", completed.stderr
    assert completed.stdout.rstrip("\n") == shown, f"{doc}: `runtime-check {args}` now prints:\n{completed.stdout}"
