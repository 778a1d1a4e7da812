"""Counting inputs, outputs and returned gradients: shared by the arity rules and runtime-check."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from cg_lint.analyses.leaves import Counter, is_tensor_op_call
from cg_lint.model.records import CallSite, CustomGradient, GradFn, ReturnSite
from cg_lint.syntax.environments import Env
from cg_lint.syntax.index import FileIndex


@dataclass(frozen=True)
class Expected:
    """How many gradients grad must return: an exact set from call sites, or a signature range."""

    low: int
    high: int | None  # None: no upper bound (*args or sequence inputs)
    exact: frozenset[int] = frozenset()
    first_call: CallSite | None = None  # for messages; its position is computed only when reported

    @property
    def call_line(self) -> int | None:
        return None if self.first_call is None else self.first_call.line

    def accepts(self, n: int) -> bool:
        if self.exact:
            return n in self.exact
        return n >= self.low and (self.high is None or n <= self.high)


def expected_inputs(record: CustomGradient, index: FileIndex) -> Expected | None:
    """The number of flattened positional inputs, or None when it cannot be known."""
    sig = record.signature
    exact: set[int] = set()
    first_call = None
    for site in record.call_sites:
        if site.via_partial:
            continue  # functools.partial binds some inputs; the call of the result is not seen here
        if site.has_star:
            exact = set()
            break
        caller = _enclosing_func(index, site.node)
        env = index.env_for(caller) if caller is not None else Env()
        counter = Counter(env, index.qualnames)
        counts: list[int | None] = []
        for i, arg in enumerate(site.positional):
            if type(arg.value) in (cst.List, cst.Tuple):
                counts.append(counter.count(arg.value))
            elif i < len(sig.positional) and sig.positional[i].name in record.structured_params:
                counts.append(None)
            else:
                counts.append(1)
        total = None if None in counts else sum(c for c in counts if c is not None)
        if total is None:
            exact = set()
            break
        exact.add(total)
        first_call = first_call or site
    if exact:
        return Expected(min(exact), max(exact), frozenset(exact), first_call)
    required = len(sig.required)
    unbounded = sig.varargs is not None or any(p.name in record.structured_params for p in sig.positional)
    if sig.varargs is not None and not sig.positional:
        return None
    return Expected(required, None if unbounded else len(sig.positional))


def _enclosing_func(index: FileIndex, node: cst.CSTNode):
    return index.enclosing(node, (cst.FunctionDef, cst.Lambda))


def grad_counter(record: CustomGradient, grad: GradFn, index: FileIndex) -> Counter:
    return Counter(index.env_for(grad.node), index.qualnames, record.structured_params)


def returned_counts(grad: GradFn, site: ReturnSite, counter: Counter) -> set[int] | None:
    """Every count a return of grad could mean (plain gradients, or the variables pair)."""
    value = site.value
    if value is None:
        return None
    pair = value.elements if type(value) in (cst.Tuple, cst.List) and len(value.elements) == 2 else None
    if grad.is_custom_gradient:
        # a higher-order grad returns (grads, grad_of_grad): the first element holds the gradients
        if pair is None or type(pair[0]) is cst.StarredElement:
            return None
        value = pair[0].value
        pair = value.elements if type(value) in (cst.Tuple, cst.List) and len(value.elements) == 2 else None
    options = {counter.count(value)}
    if grad.accepts_variables and pair is not None and type(pair[0]) is not cst.StarredElement:
        first = counter.count(pair[0].value)
        # `variables` declared and a list beside the input grads: only the pair reading makes sense
        if grad.declares_variables and _list_like(pair[1].value, counter):
            options = {first}
        else:
            options.add(first)
    if None in options:
        return None
    return options  # type: ignore[return-value]


def _list_like(expr: cst.BaseExpression, counter: Counter) -> bool:
    if type(expr) in (cst.List, cst.ListComp):
        return True
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "list":
        return True
    if type(expr) is cst.Name:
        values = counter.env.lookup(expr.value) or []
        return bool(values) and all(type(v) in (cst.List, cst.ListComp) for v in values)
    return False


class Kind:
    FUNCTION = "function"
    NOT_CALLABLE = "not-callable"
    UNKNOWN = "unknown"


def classify(expr: cst.BaseExpression, env: Env, own_params: set[str], qualnames, depth: int = 0) -> str:
    """Whether a value is obviously a function, obviously not one, or unknown."""
    if depth > 8:
        return Kind.UNKNOWN
    if type(expr) is cst.Lambda:
        return Kind.FUNCTION
    if type(expr) is cst.Name:
        if expr.value in ("None", "True", "False"):
            return Kind.NOT_CALLABLE
        values = env.lookup(expr.value)
        if values is None:
            return Kind.UNKNOWN
        if not values:
            return Kind.NOT_CALLABLE if expr.value in own_params else Kind.UNKNOWN
        kinds = set()
        for v in values:
            if type(v) in (cst.FunctionDef, cst.Lambda):
                kinds.add(Kind.FUNCTION)
            elif isinstance(v, cst.BaseExpression):
                kinds.add(classify(v, env, own_params, qualnames, depth + 1))
            else:
                kinds.add(Kind.UNKNOWN)
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
    if isinstance(expr, (cst.BaseNumber, cst.BaseString, cst.BinaryOperation, cst.UnaryOperation,
                         cst.Comparison, cst.Tuple, cst.List, cst.Dict, cst.ListComp, cst.DictComp)):
        return Kind.NOT_CALLABLE
    if is_tensor_op_call(expr, qualnames):
        return Kind.NOT_CALLABLE
    return Kind.UNKNOWN
