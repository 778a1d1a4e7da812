"""Graph-mode rules: Python values taken from tensors inside custom-gradient bodies.

AutoGraph never converts the forward or grad of a custom gradient (TF allowlists the decorator's
wrapper), so inside ``tf.function`` or Keras ``fit`` their Python control flow runs on symbolic
tensors. All of these work eagerly and fail when traced.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.contexts import asserts_eager, context_of
from cg_lint.analyses.tensors import Tensors, body_nodes, python_value_uses, return_values, statement_of
from cg_lint.codes import CG009, CG010, CG011, CG012
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient, FuncNode
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.model.bodies import all_bodies

_GRAPH = "under tf.function"
_BOOL_ERROR = "raises OperatorNotAllowedInGraphError (AutoGraph does not convert custom-gradient bodies)"


def _python_values(ctx: LintContext, record: CustomGradient) -> dict[str, list[tuple[cst.CSTNode, str]]]:
    key = ("python-values", id(record))
    if key not in ctx.cache:
        ctx.cache[key] = python_value_uses(ctx.index, record)
    return ctx.cache[key]  # type: ignore[return-value]


def _tensors(ctx: LintContext, record: CustomGradient) -> Tensors:
    """Tensor facts for the graph-mode rules (shared); configuration inputs are CG012's business."""
    key = ("tensors", id(record))
    if key not in ctx.cache:
        ctx.cache[key] = Tensors(ctx.index, record, exclude=set(_python_values(ctx, record)))
    return ctx.cache[key]  # type: ignore[return-value]


def graph_bodies(ctx: LintContext, record: CustomGradient) -> list[tuple[FuncNode, str]]:
    """The bodies (nested functions included) that can run under tf.function: none when the custom
    gradient only ever runs eagerly (cg_lint.analyses.contexts), and not those asserting eager execution."""
    if context_of(ctx.index, record).eager_only:
        return []
    return [(b.func, b.who) for b in all_bodies(ctx.index, record)
            if not asserts_eager(ctx.index, b.top) and not asserts_eager(ctx.index, b.func)]


class _Reporter:
    """One finding per statement and rule: the first problem on a line is the one to fix."""

    def __init__(self, rule: Rule, ctx: LintContext, record: CustomGradient) -> None:
        self.rule, self.ctx, self.record = rule, ctx, record
        self.seen: set[int] = set()

    def __call__(self, node: cst.CSTNode, message: str) -> Finding | None:
        stmt = statement_of(self.ctx.index, node)
        if id(stmt) in self.seen:
            return None
        self.seen.add(id(stmt))
        line, column = self.ctx.position(stmt)
        note = context_of(self.ctx.index, self.record).traced_note()
        if note:  # the file shows the graph mode the message is about
            message = message.replace(_GRAPH, _GRAPH + note, 1)
        return self.rule.finding(self.ctx, line, column, message, self.record.qualname)


# -- truth tests ----------------------------------------------------------------------------------
def truth_tests(ctx: LintContext, func: FuncNode) -> Iterator[tuple[cst.BaseExpression, str]]:
    """Every expression whose Python truth value a body takes, with the construct that takes it."""
    consumed: set[int] = set()

    def tested(expr: cst.BaseExpression, construct: str) -> Iterator[tuple[cst.BaseExpression, str]]:
        consumed.add(id(expr))
        if type(expr) is cst.BooleanOperation:
            yield from tested(expr.left, construct)
            yield from tested(expr.right, construct)
        elif type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Not:
            yield from tested(expr.expression, construct)
        else:
            yield expr, construct

    for node in body_nodes(func, ctx.index):
        if type(node) is cst.If:
            yield from tested(node.test, "if")
        elif type(node) is cst.While:
            yield from tested(node.test, "while")
        elif type(node) is cst.IfExp:
            yield from tested(node.test, "conditional expression")
        elif type(node) is cst.Assert:
            yield from tested(node.test, "assert")
        elif type(node) is cst.CompIf:
            yield from tested(node.test, "if")
        elif type(node) is cst.BooleanOperation and id(node) not in consumed:
            # `a and b` outside a test takes the truth value of `a` only
            consumed.add(id(node))
            yield from tested(node.left, "and" if type(node.operator) is cst.And else "or")
        elif (type(node) is cst.UnaryOperation and type(node.operator) is cst.Not
              and id(node) not in consumed):
            yield from tested(node.expression, "not")
        elif (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "bool"
              and len(node.args) == 1 and not node.args[0].star):
            yield from tested(node.args[0].value, "bool()")
        elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in _COMPARING:
            yield from _compared(ctx, node)


# builtins that take the truth value of (or compare) what they are given
_COMPARING = frozenset({"max", "min", "any", "all", "sorted"})


def _compared(ctx: LintContext, call: cst.Call) -> Iterator[tuple[cst.BaseExpression, str]]:
    """``max(a, b)`` compares a and b; ``any([a, b])`` tests each element (iterating one tensor is
    CG010's business)."""
    fn = call.func.value  # type: ignore[attr-defined]
    if call_name(call, ctx.index.qualnames) != fn or any(a.star for a in call.args):
        return
    args = [a.value for a in call.args if a.keyword is None]
    if fn in ("max", "min") and len(args) >= 2:
        for arg in args:
            yield arg, f"{fn}()"
    elif len(args) == 1 and type(args[0]) in (cst.List, cst.Tuple):
        for element in args[0].elements:
            if type(element) is cst.Element:
                yield element.value, f"{fn}()"


_INSTEAD = {
    "if": "use tf.where for element-wise choices, or tf.cond with a scalar predicate (tf.reduce_any/tf.reduce_all)",
    "conditional expression": "use tf.where, or tf.cond with a scalar predicate (tf.reduce_any/tf.reduce_all)",
    "while": "use tf.while_loop",
    "assert": "use tf.debugging.assert_* (e.g. tf.debugging.assert_positive)",
    "and": "use tf.logical_and",
    "or": "use tf.logical_or",
    "not": "use tf.logical_not",
    "bool()": "keep it a tensor: tf.where, or tf.cond with a scalar predicate",
    "max()": "use tf.maximum (or tf.reduce_max)",
    "min()": "use tf.minimum (or tf.reduce_min)",
    "any()": "use tf.reduce_any",
    "all()": "use tf.reduce_all",
    "sorted()": "use tf.sort",
}


class TensorTruthValue(Rule):
    """Python control flow or truth value on a tensor inside a custom gradient.

    ## What it does
    Flags `if`/`elif`/`while`/conditional expressions/`assert`, `and`/`or`/`not`, `bool()`, and the
    builtins that compare or truth-test what they are given (`max(a, b)`, `min(a, b)`,
    `any([a, b])`, `all(...)`, `sorted(...)`) applied to a tensor in the forward or in grad, and in
    every function nested in them: `tf.cond` branches, `tf.while_loop` bodies, local helpers and
    lambdas run unconverted too. Tensors are the forward's positional inputs, grad's upstream
    gradients, results of TF ops, arithmetic, comparisons and subscripts of those, parameters of a
    nested function that every call passes a tensor, and what a helper function of the same file
    returns when its `return` is one (`def first(t): return tf.gather(t, 0)`). Shapes, dtypes,
    `x is None`, `isinstance` and Python constants are not tensors and are fine.

    ## Why is this bad?
    AutoGraph never converts custom-gradient bodies, even inside an AutoGraph-converted
    `tf.function`. The code works eagerly; under `tf.function` or Keras `fit` the truth value of a
    symbolic tensor raises `OperatorNotAllowedInGraphError: Using a symbolic tf.Tensor as a Python
    bool is not allowed`. With a non-scalar tensor it already fails eagerly ("The truth value of an
    array with more than one element is ambiguous").

    ## Example
    ```python
    @tf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            if tf.reduce_max(tf.abs(dy)) > 1.0:
                dy = tf.clip_by_norm(dy, 1.0)
            return dy
        return tf.identity(x), grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return tf.clip_by_norm(dy, 1.0)  # a no-op when the norm is already small
        return tf.identity(x), grad
    ```
    Element-wise choices go through `tf.where(x > 0, a, b)`; a real branch through
    `tf.cond(tf.reduce_any(x > 0), true_fn, false_fn)`.

    ## Fix safety
    No automatic fix: the replacement depends on whether the condition is element-wise.

    ## Known limitations
    Helpers are followed one call deep, and only plain functions of the same file; attributes
    (`self.x`) and closure variables are not known to be tensors and are not checked. Functions
    decorated with `tf.function`, or passed to `tf.map_fn`/`tf.vectorized_map` (which convert their
    function with AutoGraph), are not part of the unconverted body. Branches that test
    `tf.executing_eagerly()` and `try` blocks that catch `TypeError` are skipped on purpose.

    ## Eager-only code
    Graph mode cannot happen, and the rule stays silent, when the custom gradient is called only
    through `tf.py_function`/`tf.numpy_function` (it must then be local or private, so no other
    module calls it), when the module calls `tf.config.run_functions_eagerly(True)` at module level,
    when it is defined under `if tf.executing_eagerly():` or every call is, and in a forward or grad
    that asserts `tf.executing_eagerly()` (`assert ...`, or `if not ...: raise`) before anything
    else. Each context is run on TensorFlow by the VALID examples. When a `tf.function` of the same
    file calls the custom gradient, the message names that line.
    """

    code = CG009
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    if x.shape.rank == 0:  # static: known while tracing
        x = tf.reshape(x, [1])
    if x.shape[0] is None or len(x.shape) > 3:
        pass
    def grad(dy):
        if dy is None:
            return None
        return tf.where(x > 0, dy, 0.1 * dy)
    return tf.identity(x), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    y = tf.cond(tf.reduce_any(x > 0), lambda: x * 2.0, lambda: x)
    def grad(dy):
        return tf.cond(tf.reduce_all(dy > 0), lambda: dy, lambda: -dy)
    return y, grad
""",
        """
import tensorflow as tf

def make(scale, clip=True):
    @tf.custom_gradient
    def f(x):
        y = x * scale if clip else x  # closure constants are Python values
        def grad(dy):
            if clip and scale > 1.0:
                dy = dy / scale
            return dy
        return y, grad
    return f
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    if tf.executing_eagerly():
        print(bool(x > 0))  # only ever runs eagerly
    if isinstance(x, tf.Tensor) and x.dtype.is_floating:
        x = tf.identity(x)
    return x, lambda dy: dy
""",
        """
import tensorflow as tf

DEBUG = False

@tf.custom_gradient
def f(x):
    if DEBUG:
        tf.print(x)
    n = x.shape[-1]
    while n > 1:
        n //= 2
    return tf.identity(x), lambda dy: dy
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, flag):
    y = x * 2.0 if flag else x  # an input used only as a Python value is CG012's business
    return y, lambda dy: (dy, None)
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def _numpy_tanh(x):
    v = x.numpy()  # runs eagerly: tf.py_function below is its only caller (and it is private)
    if v.sum() > 0:
        v = np.tanh(v)
    return v, lambda dy: dy

def apply(x):
    return tf.py_function(_numpy_tanh, [x], tf.float32)

# tf: grad(apply, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

tf.config.run_functions_eagerly(True)  # every tf.function of this module runs eagerly

@tf.custom_gradient
def signed(x):
    if tf.reduce_sum(x) > 0:
        return x, lambda dy: dy
    return -x, lambda dy: -dy

# tf: grad(signed, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def debug_only(x):
    assert tf.executing_eagerly(), "a debugging aid: call it eagerly"
    if tf.reduce_any(tf.math.is_nan(x)):
        raise ValueError("NaN input")
    return tf.identity(x), lambda dy: dy

def apply(x):
    return debug_only(x) if tf.executing_eagerly() else tf.identity(x)

# tf: grad(apply, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def _checked(x):
    if tf.reduce_any(x < 0):  # only ever called eagerly: every call is guarded
        raise ValueError("negative input")
    return tf.sqrt(x), lambda dy: dy / (2.0 * tf.sqrt(x))

def safe_sqrt(x):
    if tf.executing_eagerly():
        return _checked(x)
    return tf.sqrt(x)

# tf: grad(safe_sqrt, [1.0, 4.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def doubled(x):
    @tf.function  # AutoGraph converts a tf.function, nested or not
    def helper(t):
        if tf.reduce_sum(t) > 0:
            return t * 2.0
        return t
    return helper(x), lambda dy: dy * 2.0

# tf: grad(doubled, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def clipped(x):
    def grad(dy):
        # tf.map_fn converts its function with AutoGraph (it calls tf_convert): this `if` works traced
        return tf.map_fn(lambda g: g if g < 1.0 else 1.0, dy)
    return tf.identity(x), grad

# tf: grad(clipped, [0.5, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def clip(x):
    if x > 0:  # expect: CG009
        y = x
    else:
        y = -x
    return y, lambda dy: dy
""",
        """
import tensorflow as tfx

@tfx.custom_gradient
def f(x):
    y = tfx.math.log(x)
    def grad(dy):
        while tfx.reduce_sum(dy) > 1.0:  # expect: CG009
            dy = dy / 2.0
        return dy / x
    return y, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy):
        scale = 2.0 if tf.reduce_mean(dy) > 0 else 1.0  # expect: CG009
        return dy * scale
    assert tf.reduce_all(x > 0)  # expect: CG009
    return x, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    pos = x > 0
    big = tf.abs(x) > 10.0
    if not pos:  # expect: CG009
        pass
    mask = pos and big  # expect: CG009
    return tf.identity(x), lambda dy: dy * tf.cast(bool(big), dy.dtype)  # expect: CG009
""",
        """
import tensorflow as tf

class Layer:
    @tf.custom_gradient
    def call(self, x):
        y = x * 2.0
        def grad(dy):
            if dy[0] > 0:  # expect: CG009
                return dy
            return dy * 2.0
        return y, grad
""",
        """
import tensorflow as tf

g = tf.custom_gradient(lambda x: (x, lambda dy: dy if dy > 0 else -dy))  # expect: CG009
""",
        """
import tensorflow as tf

@tf.custom_gradient
def doubled_if_positive(x):
    def positive():
        if tf.reduce_sum(x) > 0:  # expect: CG009
            return x * 2.0
        return x
    y = tf.cond(tf.reduce_all(x > -10.0), positive, lambda: x)  # a tf.cond branch is not converted either
    return y, lambda dy: dy * 2.0

# tf: grad(doubled_if_positive, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def halved_grad(x):
    def grad(dy):
        def clip(g):
            if tf.reduce_max(g) > 1.0:  # expect: CG009
                return g / 2.0
            return g
        return clip(dy)
    return tf.identity(x), grad

# tf: grad(halved_grad, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def scaled_by_max(x):
    m = max(tf.reduce_max(x), 0.0)  # expect: CG009
    return x * m, lambda dy: dy * m

# tf: grad(scaled_by_max, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

def first(t):
    return tf.gather(t, 0)

@tf.custom_gradient
def signed(x):
    if first(x) > 0:  # expect: CG009
        y = x
    else:
        y = -x
    return y, lambda dy: dy

# tf: grad(signed, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def doubled_while_positive(x):
    def body(i, acc):
        if acc[0] > 0:  # expect: CG009
            acc = acc * 2.0
        return i + 1, acc
    _, y = tf.while_loop(lambda i, acc: i < 2, body, [0, x])
    return y, lambda dy: dy * 4.0

# tf: grad(doubled_while_positive, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def running_max(x):
    def step(acc, v):
        return acc if acc > v else v  # expect: CG009
    y = tf.scan(step, x)
    return y, lambda dy: dy

# tf: grad(running_max, [0.5, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors = _tensors(ctx, record)
            report = _Reporter(self, ctx, record)
            for func, who in graph_bodies(ctx, record):
                for expr, construct in truth_tests(ctx, func):
                    if not tensors.is_tensor(expr):
                        continue
                    verb = {"if": "branches on", "conditional expression": "branches on", "while": "loops on",
                            "assert": "asserts on", "max()": "compares", "min()": "compares",
                            "sorted()": "compares"}.get(construct, "takes the truth value of")
                    finding = report(expr, f"{who} {verb} a tensor with Python '{construct}' ({describe(expr)}): "
                                           f"{_GRAPH} this {_BOOL_ERROR}; {_INSTEAD[construct]}")
                    if finding:
                        yield finding


# -- Python values from tensors -------------------------------------------------------------------
_NUMBERS = {"int": "int() argument must be ... not 'SymbolicTensor'",
            "float": "float() argument must be ... not 'SymbolicTensor'",
            "complex": "complex() argument must be ... not 'SymbolicTensor'"}


class TensorAsPythonValue(Rule):
    """`.numpy()`, `int()`/`float()`/`len()`, NumPy or iteration on a tensor in a custom gradient.

    ## What it does
    Flags, in the forward and in grad (and the functions nested in them, see CG009): `t.numpy()`,
    `int(t)`, `float(t)`, `len(t)`, `np.*(t)`, `range(t)` (including `for i in range(t)`) and
    iterating a tensor: `for row in t`, `for i in tf.range(n)`, comprehensions, and the builtins
    that iterate their argument (`list`, `tuple`, `sum`, `max(t)`, `min(t)`, `any`, `all`,
    `sorted`, `enumerate`, `zip`, `map`...), where `t` is a tensor (see CG009 for what counts as one).

    ## Why is this bad?
    AutoGraph does not convert custom-gradient bodies, so under `tf.function` and Keras `fit` they
    run on symbolic tensors, which have no value: `.numpy()` raises `AttributeError: 'SymbolicTensor'
    object has no attribute 'numpy'`, `int()`/`float()` and `range()` raise `TypeError`, `len()`
    raises `TypeError: len is not well defined for a symbolic Tensor`, NumPy raises
    `NotImplementedError: Cannot convert a symbolic tf.Tensor to a numpy array`, and iterating raises
    `OperatorNotAllowedInGraphError`. All of them work eagerly.

    ## Example
    ```python
    @tf.custom_gradient
    def soft_sign(x):
        def grad(dy):
            return dy / np.square(1.0 + np.abs(x))
        return x / (1.0 + tf.abs(x)), grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def soft_sign(x):
        def grad(dy):
            return dy / tf.square(1.0 + tf.abs(x))
        return x / (1.0 + tf.abs(x)), grad
    ```
    Use the static shape (`x.shape[0]`) when a Python number is needed, and `tf.range`,
    `tf.map_fn` or vectorised ops instead of Python loops over tensors.

    ## Fix safety
    No automatic fix.

    ## Known limitations
    Only expressions known to be tensors are checked (see CG009). Calls whose result is a tuple of
    tensors (`tf.unstack`, `tf.linalg.slogdet`) may be iterated and are not flagged.

    ## Eager-only code
    Silent where graph mode cannot happen, as CG009 describes.
    """

    code = CG010
    VALID = (
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def f(x):
    n = int(np.prod(x.shape[1:]))  # static shape: Python ints while tracing
    for i in range(len(x.shape)):
        pass
    rows = [r for r in tf.unstack(x, num=2)]
    scale = np.float32(0.5)
    def grad(dy):
        return tf.reshape(dy, [-1, n]) * scale
    return tf.reshape(x, [-1, n]), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    if tf.executing_eagerly():
        print(x.numpy())
    sign, logdet = tf.linalg.slogdet(x)
    return logdet, lambda dy: dy * tf.linalg.inv(x)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(*xs):
    total = tf.add_n(list(xs))  # *xs is a tuple of tensors
    return total, lambda dy: [dy for _ in xs]
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, n):
    for _ in range(n):  # n is used only as a Python value: CG012's business
        x = tf.identity(x)
    return x, lambda dy: (dy, None)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def rest_sum(x):
    parts = tf.unstack(x, num=4)
    parts = parts[1:]  # rebound from itself: still a Python list of tensors
    total = tf.zeros_like(parts[0])
    for part in parts:
        total += part
    return total, lambda dy: tf.concat([tf.zeros_like(dy[None]), tf.stack([dy] * 3)], 0)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def total(x):
    parts = tf.unstack(x, num=2)  # a Python list of tensors: sum() adds them
    s = sum(parts)
    n = max(x.shape[0], 1)  # static shape: a Python int
    return s / n, lambda dy: dy * tf.ones_like(x) / n

# tf: grad(total, [1.0, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def soft_sign(x):
    def grad(dy):
        return dy / np.square(1.0 + np.abs(x))  # expect: CG010
    return x / (1.0 + tf.abs(x)), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    threshold = float(tf.reduce_mean(x))  # expect: CG010
    def grad(dy):
        print(dy.numpy())  # expect: CG010
        return dy
    return tf.identity(x), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    ys = []
    for i in range(tf.shape(x)[0]):  # expect: CG010
        ys.append(x[i] * 2.0)
    for row in tf.abs(x) * 2.0:  # expect: CG010
        ys.append(row)
    def grad(dy):
        n = len(dy)  # expect: CG010
        return dy * 2.0
    return tf.stack(ys), grad
""",
        """
from tensorflow.python.ops import math_ops
from tensorflow import custom_gradient

@custom_gradient
def f(x):
    y = math_ops.exp(x)
    def grad(dy):
        return [g * 2.0 for g in dy * y]  # expect: CG010
    return y, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def tail_sum(x):
    h = x * 2.0
    h = h[1:]  # rebound from itself: still one tensor
    total = 0.0
    for row in h:  # expect: CG010
        total += row
    return total, lambda dy: dy * tf.concat([[0.0], tf.fill(tf.shape(h), 2.0)], 0)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def cubed(x):
    y = x
    for _ in tf.range(2):  # expect: CG010
        y = y * x
    return y, lambda dy: dy * 3.0 * x * x

# tf: grad(cubed, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def total(x):
    s = sum(x)  # expect: CG010
    return s, lambda dy: dy * tf.ones_like(x)

# tf: grad(total, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def relu_if_any(x):
    def grad(dy):
        def mask(g):
            return g * 0.0 if not any(x > 0) else g  # expect: CG010
        return mask(dy)
    return tf.identity(x), grad

# tf: grad(relu_if_any, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors = _tensors(ctx, record)
            report = _Reporter(self, ctx, record)
            for func, who in graph_bodies(ctx, record):
                for node in body_nodes(func, ctx.index):
                    message = self._problem(ctx, tensors, node, who)
                    if message and (finding := report(node, message)):
                        yield finding

    def _problem(self, ctx: LintContext, tensors: Tensors, node: cst.CSTNode, who: str) -> str | None:
        if type(node) is cst.Call:
            func = node.func
            args = [a.value for a in node.args if not a.star]
            if type(func) is cst.Attribute and func.attr.value == "numpy" and not node.args:
                if tensors.is_tensor(func.value):
                    return (f"{who} calls .numpy() on a tensor ({describe(func.value)}): {_GRAPH} tensors are symbolic "
                            f"and this raises AttributeError: 'SymbolicTensor' object has no attribute 'numpy'; "
                            f"compute with TF ops instead")
                return None
            if type(func) is cst.Name and func.value in _BUILTINS and not ctx.index.enclosing_env_binds(func):
                if call_name(node, ctx.index.qualnames) == func.value:  # not an import of the same name
                    return self._builtin(func.value, args, tensors, who)
                return None
            name = call_name(node, ctx.index.qualnames) or ""
            if name.startswith("numpy.") and not name.startswith(("numpy.float", "numpy.int", "numpy.dtype")):
                bad = next((a for a in args if tensors.is_tensor(a)), None)
                if bad is not None:
                    return (f"{who} passes a tensor ({describe(bad)}) to {name.replace('numpy.', 'np.')}(): {_GRAPH} "
                            f"this raises NotImplementedError: Cannot convert a symbolic tf.Tensor to a numpy array; "
                            f"use the tf.math (or tf.experimental.numpy) equivalent")
            return None
        if type(node) in (cst.For, cst.CompFor) and tensors.is_single_tensor(node.iter):
            return self._iterates(who, node.iter)
        return None

    def _builtin(self, fn: str, args: list[cst.BaseExpression], tensors: Tensors, who: str) -> str | None:
        if fn == "range":
            bad = next((a for a in args if tensors.is_tensor(a)), None)
            if bad is None:
                return None
            return (f"{who} calls range() on a tensor ({describe(bad)}): {_GRAPH} this raises TypeError: "
                    f"'SymbolicTensor' object cannot be interpreted as an integer; use a static size "
                    f"(x.shape[i]), tf.range, tf.map_fn or tf.while_loop")
        if fn in _ITERATING:
            if fn in ("max", "min") and len(args) != 1:
                return None  # max(a, b) compares a and b: CG009's business
            iterated = args[1:] if fn == "map" else args if fn == "zip" else args[:1]
            bad = next((a for a in iterated if tensors.is_single_tensor(a)), None)
            return self._iterates(who, bad, fn) if bad is not None else None
        if len(args) != 1:
            return None
        arg = args[0]
        if not tensors.is_tensor(arg):
            return None
        if fn == "len":
            return (f"{who} calls len() on a tensor ({describe(arg)}): {_GRAPH} this raises TypeError: len is not "
                    f"well defined for a symbolic Tensor; use the static x.shape[0] or tf.shape(x)[0]")
        return (f"{who} converts a tensor to a Python number with {fn}() ({describe(arg)}): {_GRAPH} this raises "
                f"TypeError: {_NUMBERS[fn]}; keep it a tensor (tf.cast) or use a static shape value")

    @staticmethod
    def _iterates(who: str, expr: cst.BaseExpression, builtin: str | None = None) -> str:
        how = f"iterates over a tensor with {builtin}()" if builtin else "iterates over a tensor"
        return (f"{who} {how} ({describe(expr)}): {_GRAPH} this raises "
                f"OperatorNotAllowedInGraphError: Iterating over a symbolic tf.Tensor is not allowed; use "
                f"vectorised ops, tf.map_fn, or tf.unstack(x, num=...) with a static size")


# builtins CG010 checks: conversions to Python numbers, len, range, and those that iterate
_ITERATING = frozenset({"list", "tuple", "set", "frozenset", "sum", "max", "min", "any", "all", "sorted",
                        "enumerate", "zip", "map", "iter", "reversed"})
_BUILTINS = frozenset({"int", "float", "complex", "len", "range"}) | _ITERATING


# -- tf.cond with an element-wise predicate -------------------------------------------------------
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
            tensors = _tensors(ctx, record)
            report = _Reporter(self, ctx, record)
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
                        f"more than one element is ambiguous', {_GRAPH} InvalidArgumentError when the graph runs "
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


# -- positional inputs used as Python values ------------------------------------------------------
class InputUsedAsPythonValue(Rule):
    """A positional input of a custom gradient is used as a Python value (`if training:`, `range(n)`).

    ## What it does
    Flags positional inputs of a custom-gradient function that the forward, grad, or a function
    nested in them uses only as Python values: truth-tested (`if training:`, `not flag`,
    `mode == "train"`), or passed to `range()`, `int()`, `float()`, `bool()`, `max()` or `min()`.
    Inputs also used as tensors are left to CG009/CG010.

    ## Why is this bad?
    Under `tf.function` TensorFlow converts every positional argument to a tensor *before* the
    forward runs, so `if training:` raises `OperatorNotAllowedInGraphError` and `range(n)` raises
    `TypeError: 'SymbolicTensor' object cannot be interpreted as an integer`, although both work
    eagerly. The input also needs a gradient slot (`None`) in every return of grad, and passing it by
    keyword instead breaks graph mode (CG008).

    ## Example
    ```python
    @tf.custom_gradient
    def noisy(x, training):
        y = x + tf.random.normal(tf.shape(x)) if training else x
        return y, lambda dy: (dy, None)
    ```

    ## Use instead
    ```python
    def make_noisy(training):
        @tf.custom_gradient
        def noisy(x):
            y = x + tf.random.normal(tf.shape(x)) if training else x
            return y, lambda dy: dy
        return noisy
    ```
    Configuration bound in a closure stays a Python value in every mode.

    ## Fix safety
    No automatic fix: callers change too.

    ## Known limitations
    Inputs with a default count only when a call in the same file passes them positionally.

    ## Eager-only code
    Silent where graph mode cannot happen, as CG009 describes: eagerly TF hands the forward the
    Python value itself.
    """

    code = CG012
    VALID = (
        """
import tensorflow as tf

def make(training, n):
    @tf.custom_gradient
    def f(x):
        for _ in range(n):
            x = tf.identity(x)
        y = tf.nn.dropout(x, 0.5) if training else x
        return y, lambda dy: dy
    return f
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, training=False):  # default never passed positionally: stays a Python bool
    y = x * 2.0 if training else x
    return y, lambda dy: dy * 2.0 if training else dy

z = f(tf.constant(1.0))
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, mask):
    if mask is None:
        mask = tf.ones_like(x)
    return x * mask, lambda dy: (dy * mask, None)
""",
        """
import tensorflow as tf

tf.config.run_functions_eagerly(True)  # this module's tf.functions run eagerly: `times` stays an int

@tf.custom_gradient
def repeated(x, times):
    y = x
    for _ in range(times):
        y = y * 2.0
    return y, lambda dy: (dy * 2.0 ** times, None)

# tf: grad(repeated, [1.0, 2.0], 2) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def noisy(x, training):
    y = x + tf.random.normal(tf.shape(x)) if training else x  # expect: CG012
    return y, lambda dy: (dy, None)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def repeat(x, n):
    y = x
    for _ in range(n):  # expect: CG012
        y = tf.sin(y)
    return y, lambda dy: (dy, None)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, mode="train"):
    def grad(dy):
        if mode == "train":  # expect: CG012
            return dy, None
        return tf.zeros_like(dy), None
    return tf.identity(x), grad

y = f(tf.constant(1.0), "eval")
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, level):
    y = x * 2.0
    if 0 < level:  # expect: CG012
        y = y + 1.0
    return y, lambda dy: (dy * 2.0, None)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def repeated(x, times):
    def grad(dy):
        def scale(g):
            for _ in range(max(times, 1)):  # expect: CG012
                g = g * 2.0
            return g
        return scale(dy), None
    return tf.identity(x), grad

# tf: grad(repeated, [1.0, 2.0], 2) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            report = _Reporter(self, ctx, record)
            running = {id(func) for func, _ in graph_bodies(ctx, record)}
            for name, uses in _python_values(ctx, record).items():
                for node, how in uses:
                    if id(ctx.index.owner(node)) not in running:
                        continue
                    error = ("TypeError" if how.endswith("()") and how not in ("bool()", "max()", "min()")
                             else "OperatorNotAllowedInGraphError")
                    finding = report(node, (
                        f"'{record.name}' uses its positional input '{name}' as a Python value ({how}): {_GRAPH} "
                        f"TF converts positional inputs to tensors before the body runs, so this raises {error}; "
                        f"bind '{name}' in a closure (a factory function) instead of passing it"))
                    if finding:
                        yield finding
