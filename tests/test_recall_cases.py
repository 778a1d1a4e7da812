"""The recall benchmark (bench/recall): the cases cg-lint catches stay caught, with their own code.

Lint only: TensorFlow is not imported. That each case really fails on TensorFlow is recorded by
bench/recall/prove.py in bench/recall/proof.txt; this checks the record covers every case.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECALL = ROOT / "bench" / "recall"

# every case cg-lint finds today with the code its header expects
CAUGHT = frozenset({
    "c01_grad_returns_nothing_via_helper", "c02_grad_too_many_starred", "c03_upstream_unpacked_from_args",
    "c04_upstream_lambda_two_params", "c05_partial_grad_extra_gradient", "c06_grad_branch_on_config",
    "c07_keyword_call_of_factory_op", "c09_variable_through_object", "c11_numpy_in_helper_of_grad",
    "c12_keras_convert_to_numpy_in_grad", "c13_fstring_format_spec_on_tensor", "c14_percent_format_on_tensor",
    "c15_shape_as_list_batch_in_layer", "c16_range_batch_in_layer",
    "c17_numpy_function_output_without_set_shape", "c18_numpy_kernel_float64", "c19_with_name_scope_method",
    "c20_base_method_called_with_self", "c21_decorator_injects_training_keyword",
    "c22_wraps_wrapper_truth_value", "c23_namedtuple_outputs_one_upstream", "c24_split_outputs_one_upstream",
    "c25_dict_outputs_upstream_order", "c26_grad_ignores_upstream_in_helper", "c27_upstream_replaced_by_ones",
    "c28_compat_v2_truth_value", "c29_try_import_chained_comparison", "c30_starred_call_gradient_count",
    "c31_config_object_positional_input", "c32_any_in_helper_of_forward", "c33_len_in_helper_of_grad",
    "c34_python_max_of_tensors", "c35_sorted_on_tensor_in_grad", "c36_int_of_tensor_in_helper",
    "c37_list_input_one_gradient", "c38_module_level_grad_one_upstream", "c39_nested_outputs_two_upstreams",
    "c40_numpy_in_layer_method_helper", "c41_chained_comparison_ste_mask", "c42_unpacked_upstream_to_float",
    "c43_upstream_dropped_in_helper", "c44_forward_returns_helper_output_only",
    "c45_indexed_upstream_gradient_count",
})


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("recall_run", RECALL / "run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run() -> ModuleType:
    return _load()


@pytest.fixture(scope="module")
def results(run: ModuleType) -> dict:
    return {r.case.name: r for r in run.results()}


def test_every_case_names_its_report_and_expected_code(run: ModuleType) -> None:
    cases = run.cases()
    assert len(cases) >= 25
    for case in cases:
        assert case.source.startswith("https://"), case
        assert re.fullmatch(r"CG\d{3}", case.code), case


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_caught_case_is_found_with_its_own_code(results: dict, name: str) -> None:
    result = results[name]
    assert result.found and not result.case.new, (name, result.codes)


def test_no_case_gets_a_code_other_than_its_own(results: dict) -> None:
    wrong = {name: r.wrong for name, r in results.items() if r.wrong}
    assert not wrong


def test_proof_records_a_failure_for_every_case(results: dict) -> None:
    proof = (RECALL / "proof.txt").read_text()
    verdicts = dict(re.findall(r"^(\S+) verdict: +(.+)$", proof, re.MULTILINE))
    assert set(verdicts) == set(results)
    assert set(verdicts.values()) == {"FAILS"}


def test_readme_table_is_what_run_py_prints(run: ModuleType, results: dict) -> None:
    readme = (RECALL / "README.md").read_text()
    table = run.markdown(list(results.values()))
    assert table in readme, "regenerate: python bench/recall/run.py --markdown"
