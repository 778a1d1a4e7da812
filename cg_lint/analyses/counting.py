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
    calls: tuple[tuple[CallSite, int], ...] = ()  # each counted call and the inputs it passes

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
    sizes = record.structured_sizes
    exact: set[int] = set()
    first_call = None
    calls: list[tuple[CallSite, int]] = []
    open_ended = False  # some call passes an argument that may flatten to several inputs
    for site in record.call_sites:
        if site.via_partial:
            continue  # functools.partial binds some inputs; the call of the result is not seen here
        if site.keywords:
            continue  # keywords change what TF records (CG008's business): no count to trust
        if any(a.star == "**" for a in site.node.args):
            exact = set()
            break
        caller = _enclosing_func(index, site.node)
        env = index.env_for(caller) if caller is not None else Env()
        counter = Counter(env, index.qualnames)
        total: int | None = 0
        starred = False  # after `*xs`, argument positions no longer name parameters
        for i, arg in enumerate(a for a in site.node.args if a.keyword is None):
            if arg.star == "*":
                # `f(*state)`: TF flattens every element; known for a literal, or a name bound once
                # to a tuple literal (a list may grow by .append)
                c, starred = counter.count(arg.value) if _spelled_sequence(env, arg.value) else None, True
            elif type(arg.value) in (cst.List, cst.Tuple):
                c = counter.count(arg.value)
            elif not starred and i < len(sig.positional) and sig.positional[i].name in record.structured_params:
                c = sizes.get(sig.positional[i].name)  # `a, b = xs`: two inputs; else unknown
            elif type(arg.value) in (cst.Attribute, cst.Subscript):
                # `self.shape`, `cfg["sizes"]`: configuration often held as a tuple or a dict, which
                # TF flattens into several inputs; at least one
                c, open_ended = 1, True
            else:
                c = 1
            if c is None:
                total = None
                break
            total += c  # type: ignore[operator]
        if total is None:
            exact = set()
            break
        exact.add(total)
        calls.append((site, total))
        first_call = first_call or site
    if exact and open_ended:
        return Expected(min(exact), None, frozenset(), first_call, tuple(calls))
    if exact:
        return Expected(min(exact), max(exact), frozenset(exact), first_call, tuple(calls))
    required = sum(sizes.get(p.name, 1) for p in sig.required)
    unbounded = sig.varargs is not None or any(p.name in record.structured_params and p.name not in sizes
                                               for p in sig.positional)
    if sig.varargs is not None and not sig.positional:
        return None
    return Expected(required, None if unbounded else sum(sizes.get(p.name, 1) for p in sig.positional))


def _spelled_sequence(env: Env, expr: cst.BaseExpression) -> bool:
    if type(expr) in (cst.List, cst.Tuple):
        return True
    if type(expr) is not cst.Name:
        return False
    values = env.lookup(expr.value) or []
    return len(values) == 1 and type(values[0]) is cst.Tuple


def _enclosing_func(index: FileIndex, node: cst.CSTNode):
    return index.enclosing(node, (cst.FunctionDef, cst.Lambda))


def grad_counter(record: CustomGradient, grad: GradFn, index: FileIndex) -> Counter:
    return Counter(index.env_for(grad.node), index.qualnames, record.structured_params, helpers=helper_returns(index),
                   flat_params=True)


def helper_returns(index: FileIndex):
    """For a Counter: a plain (undecorated, not a method) function's environment and the values its
    own returns give; None for anything else (a generator, a bare ``return``, a decorated def)."""
    def returns(func: cst.FunctionDef) -> tuple[Env, list[cst.BaseExpression]] | None:
        if func.decorators or type(index.parent(func)) is cst.IndentedBlock and type(
                index.parent(index.parent(func))) is cst.ClassDef:
            return None
        values: list[cst.BaseExpression] = []
        for node in index.walk.own_nodes(func):
            if type(node) is cst.Yield:
                return None
            if type(node) is cst.Return:
                if node.value is None:
                    return None
                values.append(node.value)
        return index.env_for(func), values
    return returns


ABSENT, PRESENT = "absent", "present"


def variables_branch(index: FileIndex, grad: GradFn, node: cst.CSTNode) -> str | None:
    """Whether ``node`` of grad runs only when TF passes no variables (``if variables is None:``,
    ``if not variables:``) or only when it passes some; None when the code does not say.

    TF calls ``grad(*upstreams)`` when the forward read no variable and
    ``grad(*upstreams, variables=...)`` with a non-empty list otherwise, so a return under
    ``variables is None`` gives plain input gradients, one per input."""
    if not grad.declares_variables:
        return None
    child, parent = node, index.parent(node)
    while parent is not None and parent is not grad.node:
        if type(parent) is cst.If or type(parent) is cst.IfExp:
            sign = _variables_test(parent.test)
            if sign and child is parent.body:
                return PRESENT if sign > 0 else ABSENT
            if sign and child is parent.orelse:
                return ABSENT if sign > 0 else PRESENT
        elif type(parent) is cst.Else:
            grand = index.parent(parent)
            sign = _variables_test(grand.test) if type(grand) is cst.If else 0
            if sign:
                return ABSENT if sign > 0 else PRESENT
        elif type(parent) is cst.IndentedBlock and type(grand := index.parent(parent)) in (cst.FunctionDef,):
            # after `if variables is None: return ...` at the top of grad: variables are present
            for stmt in parent.body:
                if stmt is child:
                    break
                if (type(stmt) is cst.If and stmt.orelse is None and _variables_test(stmt.test) < 0
                        and _ends_in_return(stmt.body)):
                    return PRESENT
        child, parent = parent, index.parent(parent)
    return None


def _variables_test(test: cst.BaseExpression) -> int:
    """+1 for a test true when variables were passed, -1 for one true when they were not."""
    if type(test) is cst.Name and test.value == "variables":
        return 1
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return -_variables_test(test.expression)
    if (type(test) is cst.Comparison and type(test.left) is cst.Name and test.left.value == "variables"
            and len(test.comparisons) == 1):
        comp = test.comparisons[0]
        if type(comp.comparator) is cst.Name and comp.comparator.value == "None":
            if type(comp.operator) is cst.Is:
                return -1
            if type(comp.operator) is cst.IsNot:
                return 1
    return 0


def _ends_in_return(block: cst.BaseSuite) -> bool:
    body = block.body if type(block) is cst.IndentedBlock else []
    last = body[-1] if body else None
    return type(last) is cst.SimpleStatementLine and any(type(s) in (cst.Return, cst.Raise) for s in last.body)


def returned_counts(grad: GradFn, site: ReturnSite, counter: Counter, branch: str | None = None) -> set[int] | None:
    """Every count a return of grad could mean (plain gradients, or the variables pair); ``branch``
    (``variables_branch``) says which one it is when grad tests ``variables``."""
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
    if branch == ABSENT:
        pass  # TF called grad(*upstreams): a plain list of input gradients
    elif branch == PRESENT and pair is not None and type(pair[0]) is not cst.StarredElement:
        options = {counter.count(pair[0].value)}
    elif grad.accepts_variables and pair is not None and type(pair[0]) is not cst.StarredElement:
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
