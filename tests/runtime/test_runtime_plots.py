"""--plot: one picture per checked function, the custom gradient beside autodiff (or a central
difference) along a line through its inputs, and a summary of what each picture shows."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("matplotlib")

pytestmark = pytest.mark.tf

MODULE = textwrap.dedent('''
    import tensorflow as tf


    @tf.custom_gradient
    def exact_square(x):
        return x * x, lambda dy: dy * 2.0 * x


    @tf.custom_gradient
    def wrong_slope(x):
        return x * x, lambda dy: dy * x  # the derivative of x*x is 2x


    @tf.custom_gradient
    def ste_round(x):  # a straight-through estimator: disagrees by design, against a central difference
        return tf.round(x), lambda dy: dy


    @tf.custom_gradient
    def nan_grad(x):
        return tf.abs(x), lambda dy: dy * x / tf.abs(x)  # NaN at 0, where the forward has a kink


    @tf.custom_gradient
    def weighted(x, w):
        return tf.reduce_sum(x * w), lambda dy: (dy * w, dy * x)


    @tf.custom_gradient
    def doubled(x):
        return 2.0 * x, lambda dy: tf.stack([dy, dy])  # a gradient of the wrong shape (CG101)
''')


@pytest.fixture(scope="module")
def plotted(tmp_path_factory: pytest.TempPathFactory, cli, make_env):
    top = tmp_path_factory.mktemp("plots")
    (top / "fns.py").write_text(MODULE)
    env = make_env(CG_LINT_CACHE_DIR=str(top / "cache"))
    (top / "out").mkdir()
    stale = top / "out" / "fns.stale.json"
    stale.write_text(json.dumps({"module": "fns", "qualname": "stale", "image": None}))
    os.utime(stale, (1e9, 1e9))  # written by an earlier run
    with_plots = cli("--format", "json", "--plot", "out", "fns.py", cwd=top, env=env)
    without = cli("--format", "json", "fns.py", cwd=top, env=env)
    return top / "out", with_plots, without


def record(folder: Path, name: str) -> dict:
    return json.loads((folder / f"fns.{name}.json").read_text())


def test_a_picture_and_a_verdict_per_function(plotted):
    folder, completed, _ = plotted
    assert completed.returncode == 1, completed.stderr[-2000:]
    assert f"plots: {folder.name}/index.html" in completed.stderr
    verdicts = {name: record(folder, name) for name in ("exact_square", "wrong_slope", "ste_round", "nan_grad",
                                                          "weighted")}
    assert {n: (r["verdict"], r["reference"]) for n, r in verdicts.items()} == {
        "exact_square": ("agrees", "autodiff"), "wrong_slope": ("disagrees", "autodiff"),
        "ste_round": ("disagrees", "central difference"),  # tf.round has no gradient
        "nan_grad": ("agrees", "autodiff"),  # its NaN is at the kink, which is never compared
        "weighted": ("agrees", "autodiff"),
    }
    # x*x against x: they differ by x, everywhere but at 0
    assert 0.95 < verdicts["wrong_slope"]["share"] <= 1.0
    for name in verdicts:
        assert (folder / f"fns.{name}.png").stat().st_size > 10_000
    doubled = record(folder, "doubled")
    assert doubled["image"] is None and "shape" in doubled["note"], doubled


def test_the_summary_lists_this_runs_functions_and_says_what_each_shows(plotted):
    folder, _, _ = plotted
    page = (folder / "index.html").read_text()
    markdown = (folder / "summary.md").read_text()
    for text in (page, markdown):
        assert "fns:wrong_slope" in text and "disagrees with autodiff" in text
        assert "fns:exact_square" in text and "agrees with autodiff" in text
        assert "fns:doubled" in text and "not drawn" in text
        assert "stale" not in text  # a leftover of an earlier run into the same folder
    assert '<img src="fns.wrong_slope.png"' in page and "](fns.wrong_slope.png)" in markdown


def test_plotting_adds_no_findings(plotted):
    _, with_plots, without = plotted
    assert json.loads(with_plots.stdout) == json.loads(without.stdout)
