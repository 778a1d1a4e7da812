"""The rule registry: every rule class, by code."""

from __future__ import annotations

from cg_lint.rules.arity.forward_return_not_pair import ForwardReturnNotPair
from cg_lint.rules.arity.gradient_count_mismatch import GradientCountMismatch
from cg_lint.rules.arity.upstream_count_mismatch import UpstreamCountMismatch
from cg_lint.rules.base import Rule
from cg_lint.rules.call_sites.keyword_arguments import KeywordArguments
from cg_lint.rules.call_sites.self_as_input import SelfAsInput
from cg_lint.rules.gradients.upstream_unused import UpstreamUnused
from cg_lint.rules.graph_mode.elementwise_cond_predicate import ElementwiseCondPredicate
from cg_lint.rules.graph_mode.input_used_as_python_value import InputUsedAsPythonValue
from cg_lint.rules.graph_mode.numpy_kernel_dtype import NumpyKernelDtype
from cg_lint.rules.graph_mode.static_batch_dimension import StaticBatchDimension
from cg_lint.rules.graph_mode.tensor_as_python_value import TensorAsPythonValue
from cg_lint.rules.graph_mode.tensor_truth_value import TensorTruthValue
from cg_lint.rules.graph_mode.unknown_static_shape import UnknownStaticShape
from cg_lint.rules.variables.missing_variables_argument import MissingVariablesArgument
from cg_lint.rules.variables.positional_variable_grads import PositionalVariableGrads
from cg_lint.rules.variables.variable_grads_not_list import VariableGradsNotList
from cg_lint.rules.variables.variable_read_in_grad import VariableReadInGrad
from cg_lint.rules.variables.variables_return_not_pair import VariablesReturnNotPair

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            ForwardReturnNotPair, UpstreamCountMismatch, GradientCountMismatch,
            TensorTruthValue, TensorAsPythonValue, ElementwiseCondPredicate, InputUsedAsPythonValue,
            MissingVariablesArgument, VariablesReturnNotPair, VariableGradsNotList, PositionalVariableGrads,
            VariableReadInGrad, KeywordArguments, UpstreamUnused, SelfAsInput, StaticBatchDimension,
            NumpyKernelDtype, UnknownStaticShape,
        ),
        key=lambda r: r.code,
    )
)
RULES_BY_CODE: dict[str, type[Rule]] = {r.code: r for r in ALL_RULES}
