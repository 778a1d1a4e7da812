"""The timeout is per probe: a slow function is checked, a stuck one says where it stopped (real TF)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

pytestmark = [pytest.mark.tf, pytest.mark.slow]

MODULE = textwrap.dedent('''
    import time

    import tensorflow as tf


    @tf.custom_gradient
    def slow(x):
        time.sleep(1.5)  # every probe is slow, the whole function far beyond the limit; none is stuck
        return 2.0 * x, lambda dy: 2.0 * dy


    @tf.custom_gradient
    def stuck_when_traced(x):
        if not tf.executing_eagerly():
            time.sleep(600)
        return 2.0 * x, lambda dy: 2.0 * dy
''')


def test_slow_is_not_stuck(tmp_path: Path, cli):
    (tmp_path / "timing.py").write_text(MODULE)
    completed = cli("--format", "json", "--timeout", "3", "--no-magnitudes", "timing.py", cwd=tmp_path)
    findings = json.loads(completed.stdout)
    assert [f["function"] for f in findings] == ["stuck_when_traced"], findings
    (stuck,) = findings
    assert stuck["code"] == "CG120"
    assert stuck["message"].startswith("'stuck_when_traced' did not finish within 3 s: stuck in the tf.function "
                                       "probe with inputs x: float32[] for 3 s (")
