"""CG009 tensor-truth-value: Python control flow or truth value on a tensor."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.tensors import Tensors
from cg_lint.codes import CG009
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.graph_mode.graph_mode_shared import (
    GRAPH,
    Reporter,
    converted,
    graph_bodies,
    graph_tensors,
    helper_bodies,
    helper_leads,
)
from cg_lint.model.records import FuncNode
from cg_lint.rules.graph_mode.truth_tests import truth_tests

_BOOL_ERROR = "raises OperatorNotAllowedInGraphError (AutoGraph does not convert custom-gradient bodies)"
# what fails even in a body AutoGraph converts (tests/tf_behaviour/a_contexts.out)
_NEVER_CONVERTED = frozenset({"bool()", "assert", "chained comparison"})  # AutoGraph leaves them Python


def _bool_error(autograph: str | None, construct: str) -> str:
    if autograph is None:
        return _BOOL_ERROR
    return (f"raises OperatorNotAllowedInGraphError (AutoGraph converts this body, since {autograph}, "
            f"but not {construct})")

_INSTEAD = {
    "if": "use tf.where for element-wise choices, or tf.cond with a scalar predicate (tf.reduce_any/tf.reduce_all)",
    "conditional expression": "use tf.where, or tf.cond with a scalar predicate (tf.reduce_any/tf.reduce_all)",
    "while": "use tf.while_loop",
    "assert": "use tf.debugging.assert_* (e.g. tf.debugging.assert_positive)",
    "and": "use tf.logical_and",
    "or": "use tf.logical_or",
    "not": "use tf.logical_not",
    "chained comparison": "compare once per operator and combine with tf.logical_and (a < x < b is (a < x) and "
                          "(x < b))",
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
    `any([a, b])`, `all(...)`, `sorted(...)`), and chained comparisons (`lo <= x <= hi` is
    `(lo <= x) and (x <= hi)`) applied to a tensor in the forward or in grad, and in every function
    nested in them: `tf.cond` branches, `tf.while_loop` bodies, local helpers and lambdas run
    unconverted too. Tensors are the forward's positional inputs, grad's upstream gradients (also
    those unpacked from `*args`: `(dy,) = args`), results of TF ops, arithmetic, comparisons and
    subscripts of those, parameters of a nested function that every call passes a tensor, and what
    a helper function of the same file returns when its `return` is one (`def first(t): return
    tf.gather(t, 0)`). Shapes, dtypes, `x is None`, `isinstance` and Python constants are not
    tensors and are fine.

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
    Helpers are followed one call deep: plain functions and methods of the same file (reported in
    the helper), and functions the file imports from another module of the project
    (`from .ops import safe_norm`; reported at the call, naming the helper's line). A star import,
    a name bound at run time or a function of an installed library is not followed. Attributes
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

@tf.function  # AutoGraph converts the helper: its tensor if becomes a tf.cond
def _magnitude(t):
    if tf.reduce_any(t < 0.0):
        return tf.abs(t)
    return t

@tf.custom_gradient
def soft(x):
    def grad(dy):
        return _magnitude(dy)
    return tf.identity(x), grad

# tf: grad(soft, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf


@tf.function
def step(x):
    # defined while step is traced: AutoGraph converts it, grad included
    @tf.custom_gradient
    def clipped(v):
        def grad(dy):
            if tf.reduce_all(v > 0.0):
                return dy
            return dy * 0.5
        return tf.identity(v), grad
    return clipped(x)

# tf: grad(step, [1.0, 2.0]) => both ok
""",
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
        """
try:
    import tensorflow as tf
except ImportError:  # the fallback stands in for the try body's import
    tf = None

@tf.custom_gradient
def rows(x):
    if x.shape.rank != 2:  # static: a Python bool when traced
        x = tf.reshape(x, [1, -1])
    return tf.identity(x), lambda dy: tf.reshape(dy, [-1])

# tf: grad(rows, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def window(x, lo=0.0, hi=1.0):
    assert 0 < x.shape[-1] <= 8  # static sizes: Python ints when traced
    inside = tf.logical_and(lo <= x, x <= hi)  # one comparison per operator
    return tf.where(inside, x, 0.0), lambda dy: tf.where(inside, dy, 0.0)

# tf: grad(window, [0.5, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import keras
import tensorflow as tf

class Soft(keras.layers.Layer):
    def _magnitude(self, t):
        if tf.reduce_any(t < 0.0):  # expect: CG009
            return tf.abs(t)
        return t

    def call(self, x):
        @tf.custom_gradient
        def soft(v):
            def grad(dy):
                return self._magnitude(dy)  # a method runs as unconverted as grad (Keras converts no call)
            return tf.identity(v), grad
        return soft(x)

layer = Soft()

def use(x):
    return layer(x)

# tf: grad(use, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

def _magnitude(t):
    if tf.reduce_any(t < 0.0):  # expect: CG009
        return tf.abs(t)
    return t

@tf.custom_gradient
def soft(x):
    def grad(dy):
        return _magnitude(dy)  # the helper runs as unconverted as grad
    return tf.identity(x), grad

# tf: grad(soft, [1.0, 2.0]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf


@tf.function
def step(x):
    @tf.custom_gradient
    def clipped(v):
        def grad(dy):
            # converted, but AutoGraph leaves bool() alone
            return dy if bool(tf.reduce_all(v > 0.0)) else dy * 0.5  # expect: CG009
        return tf.identity(v), grad
    return clipped(x)

# tf: grad(step, [1.0, 2.0]) => both raises OperatorNotAllowedInGraphError
""",
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
        """
try:
    import tensorflow as tf
except ImportError:  # a build installed under another name
    import tensorflow_cpu as tf

@tf.custom_gradient
def unit_interval(x):
    def grad(dy):
        return dy if 0.0 < tf.reduce_min(x) < 1.0 else tf.zeros_like(dy)  # expect: CG009
    return tf.clip_by_value(x, 0.0, 1.0), grad

# tf: grad(unit_interval, [0.5, 0.25]) => eager ok; graph raises OperatorNotAllowedInGraphError
""",
        """
import tensorflow as tf

@tf.custom_gradient
def ste_clip(x):
    def grad(dy):
        inside = -1.0 <= x <= 1.0  # expect: CG009
        return tf.where(inside, dy, tf.zeros_like(dy))
    return tf.clip_by_value(x, -1.0, 1.0), grad

# tf: grad(ste_clip, [0.5, 2.0]) => eager raises truth value of an array; graph raises OperatorNotAllowedInGraphError
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            tensors = graph_tensors(ctx, record)
            report = Reporter(self, ctx, record)
            autograph = converted(ctx, record)
            bodies = [(func, who, tensors) for func, who in graph_bodies(ctx, record)]
            for func, who, facts in bodies + helper_bodies(ctx, record):
                for expr, message in self.problems(ctx, func, who, facts, autograph):
                    if finding := report(expr, message):
                        yield finding
            yield from helper_leads(self, ctx, record)

    @staticmethod
    def problems(ctx: LintContext, func: FuncNode, who: str, facts: Tensors,
                 autograph: str | None) -> Iterator[tuple[cst.CSTNode, str]]:
        """Each truth test on a tensor in one body, with its message (also asked of a helper
        another module defines: cg_lint/rules/lead_answers.py)."""
        for expr, construct in truth_tests(ctx, func):
            if autograph and construct not in _NEVER_CONVERTED or not facts.is_tensor(expr):
                continue
            verb = {"if": "branches on", "conditional expression": "branches on", "while": "loops on",
                    "assert": "asserts on", "max()": "compares", "min()": "compares",
                    "sorted()": "compares"}.get(construct, "takes the truth value of")
            yield expr, (f"{who} {verb} a tensor with Python '{construct}' ({describe(expr)}): "
                         f"{GRAPH} this {_bool_error(autograph, construct)}; {_INSTEAD[construct]}")
