"""The TensorFlow behaviour the linter's trace-context model rests on (tests/tf_behaviour/README.md),
re-proven: each script in tests/tf_behaviour/ runs in its own interpreter with TensorFlow and must
print what its recorded ``NAME.out`` says, up to addresses, line numbers and the values marked
``<varies: ...>`` (the eager order of a custom gradient's variables changes between runs).

Re-record after a deliberate change with ``python tests/tf_behaviour/NAME.py > tests/tf_behaviour/NAME.out``.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lint_helpers import ROOT

HERE = ROOT / "tests" / "tf_behaviour"
SCRIPTS = sorted(p for p in HERE.glob("[a-z]*.py"))

pytestmark = [
    pytest.mark.tf,
    pytest.mark.slow,  # about 90 s in all, each script 10-25 s
    pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is not installed"),
]


def normalise(text: str) -> list[str]:
    text = re.sub(r"0x[0-9a-fA-F]+", "0x...", text)
    text = re.sub(r"\bline \d+", "line N", text)
    text = re.sub(r"<varies: [^>]*>", "<varies>", text)
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()]


def run_script(script: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0",
           "CUDA_VISIBLE_DEVICES": "-1", "KERAS_BACKEND": "tensorflow", "PYTHONHASHSEED": "0"}
    proc = subprocess.run([sys.executable, str(script)], cwd=HERE, capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_every_script_has_a_recorded_output() -> None:
    assert SCRIPTS
    missing = [p.name for p in SCRIPTS if not p.with_suffix(".out").exists()]
    assert not missing, missing


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script_prints_its_recorded_output(script: Path) -> None:
    want = normalise(script.with_suffix(".out").read_text(encoding="utf-8"))
    got = normalise(run_script(script))
    assert got == want, "\n".join(difflib.unified_diff(want, got, "recorded", "now", lineterm=""))
