"""CG011 elementwise-cond-predicate: a tf.cond predicate that is element-wise and never reduced."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import Tensors, body_nodes, return_values
from cg_lint.codes import CG011
from cg_lint.findings import Finding
from cg_lint.model.bodies import all_bodies
from cg_lint.model.records import CustomGradient
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH, Reporter, graph_tensors

_COND_NAMES = frozenset({"tensorflow.cond", "tensorflow.compat.v1.cond", "tensorflow.compat.v2.cond",
                         "tensorflow.python.ops.cond.cond", "tensorflow.python.ops.control_flow_ops.cond",
                         "tensorflow.python.ops.cond.cond_for_tf_v2", "keras.ops.cond", "keras.src.ops.cond"})
_ELEMENTWISE_OPS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                              "logical_and", "logical_or", "logical_not", "logical_xor", "is_nan", "is_inf",
                              "is_finite"})
# ops whose result always has rank >= 1
_RANKED_OPS = frozenset({"shape", "range", "stack", "concat", "linspace", "one_hot", "argsort", "where"})


class ElementwiseCondPredicate(Rule):
    """`tf.cond` predicate is an element-wise comparison of a non-scalar tensor.

    ## What it does
    Flags `tf.cond(pred, ...)` inside a custom gradient when `pred` is an element-wise comparison
    (`x > 0`, `tf.equal(a, b)`, `tf.math.is_nan(x)`...) of a tensor that is known to have rank >= 1
    (it is sliced, built by `tf.stack`, `tf.concat`, `tf.range`..., or an input that every call in the
    file passes as `tf.constant([...])`, `tf.ones([n])`...) and the result is
    never reduced with `tf.reduce_any`/`tf.reduce_all`.

    ## Why is this bad?
    `tf.cond` needs a scalar predicate. Eagerly, a vector predicate raises `ValueError: The truth
    value of an array with more than one element is ambiguous`; under `tf.function` it fails only when
    the graph runs (`InvalidArgumentError: ... The second input must be a scalar, but it has shape
    [3]`), even when the shape is known while tracing. A predicate of shape `[1]` is accepted
    silently, hiding the mistake until a larger batch arrives.

    ## Example
    ```python
    @tf.custom_gradient
    def safe_log(x):
        head = x[:, 0]
        y = tf.cond(head > 0, lambda: tf.math.log(x), lambda: tf.zeros_like(x))
        return y, lambda dy: dy / x
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def safe_log(x):
        head = x[:, 0]
        y = tf.cond(tf.reduce_all(head > 0), lambda: tf.math.log(x), lambda: tf.zeros_like(x))
        return y, lambda dy: dy / x
    ```
    For a per-element choice use `tf.where(x > 0, tf.math.log(x), 0.0)`.

    ## Fix safety
    No automatic fix: `reduce_any` and `reduce_all` mean different things.

    ## Known limitations
    Ranks are not inferred beyond that evidence (and, for an input, what every call in the file
    passes: `f(tf.constant([...]))`), so `tf.cond(x > 0, ...)` on an input of unknown rank is not
    flagged. The evidence survives a call of a helper of the same file (`head = first_column(x)`
    with `return t[:, 0]`, `tf.cond(positive(head), ...)` with `return t > 0`). This rule also
    applies to code that only runs eagerly, where the predicate fails just the same.
    """

    code = CG011
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    step = tf.reduce_sum(x)
    y = tf.cond(step > 0, lambda: x, lambda: -x)  # a reduction is a scalar
    head = x[:, 0]
    z = tf.cond(tf.reduce_any(head > 0), lambda: y, lambda: -y)
    w = tf.where(head > 0, head, 0.0)
    return z, lambda dy: dy
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, t):
    y = tf.cond(t > 0.5, lambda: x, lambda: x * 2.0)  # the rank of t is unknown: quiet
    return y, lambda dy: (dy, None)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def double_positive(x):
    y = tf.cond(x > 0, lambda: x * 2.0, lambda: x)
    return y, lambda dy: tf.where(x > 0, dy * 2.0, dy)

a = double_positive(tf.constant(3.0))  # every call passes a scalar
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    first = x[0, 0]  # a single element of a matrix
    y = tf.cond(first > 0, lambda: x, lambda: -x)
    return y, lambda dy: dy
""",
        """
import tensorflow as tf

def first_column(t):
    return t[:, 0]

@tf.custom_gradient
def gated(x):
    head = first_column(x)
    y = tf.cond(tf.reduce_all(head > 0), lambda: x * 2.0, lambda: x)
    return y, lambda dy: dy * 2.0

# tf: grad(gated, [[1.0, 2.0], [3.0, 4.0]]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def safe_log(x):
    head = x[:, 0]
    y = tf.cond(head > 0, lambda: tf.math.log(x), lambda: tf.zeros_like(x))  # expect: CG011
    return y, lambda dy: dy / x
""",
        """
import tensorflow as tf

@tf.custom_gradient
def double_positive(x):
    y = tf.cond(x > 0, lambda: x * 2.0, lambda: x)  # expect: CG011
    return y, lambda dy: tf.where(x > 0, dy * 2.0, dy)

v = tf.constant([-1.0, 0.0, 1.0])
out = double_positive(v)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(a, b):
    both = tf.stack([a, b])
    mask = tf.math.is_nan(both)
    def grad(dy):
        return tf.cond(mask, lambda: (dy, dy), lambda: (dy, -dy))  # expect: CG011
    return a + b, grad
""",
        """
import tensorflow as tf

def first_column(t):
    return t[:, 0]

def positive(t):
    return t > 0

@tf.custom_gradient
def gated(x):
    head = first_column(x)  # rank and element-wise facts survive a helper call
    y = tf.cond(positive(head), lambda: tf.math.log(x), lambda: tf.zeros_like(x))  # expect: CG011
    return y, lambda dy: dy / x

# tf: call(gated, [[1.0, 2.0], [3.0, 4.0]]) => eager raises truth value of an array; graph raises InvalidArgumentError
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors = graph_tensors(ctx, record)
            report = Reporter(self, ctx, record)
            ranked = _RankEvidence(ctx, record, tensors)
            for func, who in [(b.func, b.who) for b in all_bodies(ctx.index, record)]:
                for node in body_nodes(func, ctx.index):
                    if type(node) is not cst.Call or call_name(node, ctx.index.qualnames) not in _COND_NAMES:
                        continue
                    pred = _pred_arg(node)
                    if pred is None:
                        continue
                    operand = ranked.elementwise_operand(pred)
                    if operand is None:
                        continue
                    finding = report(node, (
                        f"{who} passes an element-wise predicate ({describe(pred)}) of a non-scalar tensor "
                        f"({describe(operand)}) to tf.cond: eagerly this raises 'The truth value of an array with "
                        f"more than one element is ambiguous', {GRAPH} InvalidArgumentError when the graph runs "
                        f"(shape [1] passes silently); reduce it with tf.reduce_any/tf.reduce_all, or use tf.where"))
                    if finding:
                        yield finding


def _pred_arg(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "pred":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


_SHAPED_CONSTRUCTORS = frozenset({"constant", "convert_to_tensor", "ones", "zeros", "fill", "normal", "uniform",
                                  "truncated_normal", "array", "asarray"})


class _RankEvidence:
    """Which tensors certainly have rank >= 1: how they are built or sliced, or what every call passes."""

    def __init__(self, ctx: LintContext, record: CustomGradient, tensors: Tensors) -> None:
        self.ctx, self.tensors = ctx, tensors
        self.forward_env = ctx.index.env_for(record.node)
        self.ranked_inputs = self._ranked_inputs(record)
        # while a helper's return is read: its env -> {parameter: the argument of the call}
        self._arguments: dict[int, dict[str, cst.BaseExpression]] = {}

    def _helper(self, call: cst.BaseExpression) -> tuple[cst.FunctionDef, dict[str, cst.BaseExpression],
                                                         list[cst.BaseExpression]] | None:
        """A call of a plain function of this file, its parameters bound to the call's arguments,
        and its returned values: rank and element-wise facts survive one such call."""
        if type(call) is not cst.Call or type(call.func) is not cst.Name:
            return None
        helper = self.tensors._helper(call.func)
        returns = return_values(self.ctx.index, helper) if helper is not None else []
        if helper is None or not returns or any(a.star for a in call.args) \
                or id(self.ctx.index.env_for(helper)) in self._arguments:  # recursion: no fact
            return None
        params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
        bound = dict(zip(params, (a.value for a in call.args if a.keyword is None), strict=False))
        bound.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None)
        return helper, bound, returns

    def _argument(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """``expr`` itself, or the call's argument when it names a parameter of the helper being read."""
        if type(expr) is cst.Name and self._arguments:
            owner = self.ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
            bound = self._arguments.get(id(self.ctx.index.env_for(owner)))
            if bound is not None and expr.value in bound:
                return bound[expr.value]
        return expr

    def _ranked_inputs(self, record: CustomGradient) -> set[str]:
        """Inputs that every call in the file passes a tensor built with a non-empty shape or list."""
        sites = [s for s in record.call_sites if not s.has_star and not s.via_partial]
        if not sites:
            return set()
        ranked = set()
        for i, param in enumerate(record.signature.positional):
            if all(i < len(s.positional) and self._built_ranked(s.positional[i].value) for s in sites):
                ranked.add(param.name)
        return ranked

    def _built_ranked(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        if type(expr) is cst.Name and depth < 3:
            owner = self.ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
            values = self.ctx.index.env_for(owner).lookup(expr.value)
            return bool(values) and all(isinstance(v, cst.BaseExpression) and self._built_ranked(v, depth + 1)
                                        for v in values)
        if type(expr) is not cst.Call or not expr.args:
            return False
        name = call_name(expr, self.ctx.index.qualnames) or ""
        if not name.startswith(("tensorflow.", "numpy.")) or name.rsplit(".", 1)[-1] not in _SHAPED_CONSTRUCTORS:
            return False
        first = expr.args[0].value
        return type(first) in (cst.List, cst.Tuple) and len(first.elements) > 0

    def elementwise_operand(self, pred: cst.BaseExpression, depth: int = 0) -> cst.BaseExpression | None:
        """The non-scalar operand when ``pred`` is an unreduced element-wise comparison."""
        if depth > 4:
            return None
        if type(pred) is cst.Name:
            owner = self.ctx.index.enclosing(pred, (cst.FunctionDef, cst.Lambda))
            values = self.ctx.index.env_for(owner).lookup(pred.value)
            if not values or any(not isinstance(v, cst.BaseExpression) for v in values):
                return None
            found = [self.elementwise_operand(v, depth + 1) for v in values]
            return found[0] if all(f is not None for f in found) else None
        sub = self._helper(pred)
        if sub is not None:  # `pred = positive(head)` with `def positive(t): return t > 0`
            helper, bound, returns = sub
            key = id(self.ctx.index.env_for(helper))
            self._arguments[key] = bound
            try:
                found = [self.elementwise_operand(r, depth + 1) for r in returns]
            finally:
                del self._arguments[key]
            return found[0] if all(f is not None for f in found) else None
        operands: list[cst.BaseExpression] = []
        if type(pred) is cst.Comparison:
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in pred.comparisons):
                return None
            operands = [pred.left] + [c.comparator for c in pred.comparisons]
        elif type(pred) is cst.Call:
            name = call_name(pred, self.ctx.index.qualnames) or ""
            if not name.startswith("tensorflow.") or name.rsplit(".", 1)[-1] not in _ELEMENTWISE_OPS:
                return None
            operands = [a.value for a in pred.args if a.keyword is None and not a.star]
        else:
            return None
        for operand in map(self._argument, operands):
            if self.tensors.is_tensor(operand) and self._ranked(operand, depth):
                return operand
        return None

    def _ranked(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > 4:
            return False
        expr = self._argument(expr)
        if type(expr) is cst.Subscript:
            # x[:, 0] or x[1:] keeps a dimension; x[0] or x[0, 0] may be a scalar
            return any(type(s.slice) is cst.Slice for s in expr.slice)
        sub = self._helper(expr)
        if sub is not None:  # `head = first_column(x)` with `def first_column(t): return t[:, 0]`
            helper, bound, returns = sub
            key = id(self.ctx.index.env_for(helper))
            self._arguments[key] = bound
            try:
                return all(self._ranked(r, depth + 1) for r in returns)
            finally:
                del self._arguments[key]
        if type(expr) is cst.Call:
            name = call_name(expr, self.ctx.index.qualnames) or ""
            last = name.rsplit(".", 1)[-1]
            if not name.startswith("tensorflow.") or last not in _RANKED_OPS:
                return False
            return last != "where" or len(expr.args) == 1
        if type(expr) is cst.Name:
            owner = self.ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
            env = self.ctx.index.env_for(owner)
            values = env.lookup(expr.value)
            if values:
                return all(isinstance(v, cst.BaseExpression) and self._ranked(v, depth + 1) for v in values)
            if values == [] and expr.value in self.ranked_inputs:
                # a parameter: ours only if it is the forward's input (not grad's upstream of the same name)
                scope = env
                while scope is not None and expr.value not in scope.params:
                    scope = scope.parent  # type: ignore[assignment]
                return scope is self.forward_env
            return False
        if type(expr) is cst.BinaryOperation:
            return self._ranked(expr.left, depth + 1) or self._ranked(expr.right, depth + 1)
        return False

