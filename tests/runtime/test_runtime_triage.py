"""What triaging runtime-check on real libraries changed, each on a fixture of its own, with real
TensorFlow eagerly and under tf.function: the numeric confirmation of NaN/Inf gradients, failures
the probe's own filler causes, findings that name the public function, and functions sharing one
wrapper checked each."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "triage"
SUITE = FIXTURES / "suite"


class _Findings:
    def __init__(self, completed: subprocess.CompletedProcess[str]) -> None:
        assert completed.stdout.startswith("["), completed.stdout[-2000:] + completed.stderr[-2000:]
        self.findings = json.loads(completed.stdout)

    def of(self, function: str) -> list[dict]:
        return [f for f in self.findings if f["function"] == function]

    def codes(self, function: str) -> set[str]:
        return {f["code"] for f in self.of(function)}

    def one(self, function: str, code: str) -> dict:
        matches = [f for f in self.of(function) if f["code"] == code]
        assert len(matches) == 1, (function, code, self.findings)
        return matches[0]


@pytest.fixture(scope="module")
def triage_run(cli) -> _Findings:
    return _Findings(cli("--format", "json", "--timeout", "60", "nan_confirmation.py", "probe_filler.py",
                         cwd=FIXTURES))


@pytest.mark.tf
def test_nan_gradient_where_the_forward_is_differentiable_is_reported(triage_run):
    finding = triage_run.one("sine", "CG105")
    assert "gradient for input 'x' contains NaN/Inf where the forward is finite" in finding["message"]
    assert "filled with 0" in finding["message"]


@pytest.mark.tf
@pytest.mark.parametrize("function", ["decaying", "shape_product", "exponential_sample"])
def test_nan_gradient_without_a_derivative_is_not(triage_run, function):
    # decaying: a kink (the one-sided slopes differ); shape_product: the edge of the domain in the
    # other input; exponential_sample: a sampler, whose gradient is no fixed-seed derivative
    assert triage_run.of(function) == [], triage_run.of(function)


@pytest.mark.tf
def test_a_failure_inside_the_forward_from_the_probe_filler_is_no_contract_finding(triage_run):
    codes = triage_run.codes("make_slope.<locals>.slope")
    assert "CG001" not in codes, triage_run.of("make_slope.<locals>.slope")
    note = triage_run.one("make_slope.<locals>.slope", "CG130")
    assert "TypeError" in note["message"] and "Traceback" not in note["message"]


@pytest.fixture(scope="module")
def plugin_run(make_env) -> tuple[str, list[str]]:
    registered = any(e.name == "cg_runtime_check" for e in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "runtime_check.pytest_plugin"]
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, "-p", "no:cacheprovider", "--cg-runtime-check", "."],
        cwd=SUITE, env=make_env(), capture_output=True, text=True, timeout=600,
    )
    out = completed.stdout
    assert "custom-gradient runtime check" in out, out[-3000:] + completed.stderr[-2000:]
    section = out[out.index("custom-gradient runtime check"):]
    return section, [ln for ln in section.splitlines() if " CG" in ln]


@pytest.mark.tf
def test_functions_sharing_one_wrapper_are_each_compared_eager_vs_traced(plugin_run):
    _, lines = plugin_run
    differ = [ln for ln in lines if "CG106" in ln]
    assert len(differ) == 1, lines
    assert "reached through 'softsign' in shared_wrapper_lib" in differ[0]
    assert not any("'cube'" in ln for ln in lines), lines


@pytest.mark.tf
def test_an_input_one_function_does_not_use_does_not_excuse_another(plugin_run):
    # reverse_gradient's forward does not depend on its second input (None is right); mix's does
    _, lines = plugin_run
    missing = [ln for ln in lines if "CG104" in ln]
    assert len(missing) == 1, lines
    assert "reached through 'mix' in shared_wrapper_lib" in missing[0]


@pytest.mark.tf
def test_findings_name_the_definition_and_the_public_function(plugin_run):
    _, lines = plugin_run
    for line in lines:
        assert "shared_wrapper_lib.py" in line and "'with_vjp.<locals>.call.<locals>.inner'" in line, line
        assert "reached through '" in line, line
