"""CG010 tensor-as-python-value: .numpy(), int()/float()/len(), NumPy or iteration on a tensor."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.contexts import context_of
from cg_lint.analyses.tensors import Tensors, body_nodes
from cg_lint.analyses.untraceable import in_raise, leaves_tensorflow
from cg_lint.codes import CG010
from cg_lint.findings import Finding
from cg_lint.model.records import FuncNode
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.graph_mode.string_formats import call_problem, fstring_problem, percent_problem
from cg_lint.rules.graph_mode.graph_mode_shared import (
    GRAPH,
    UNTRACEABLE,
    Reporter,
    converted,
    graph_bodies,
    graph_tensors,
    helper_bodies,
    helper_leads,
)

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
    `sorted`, `enumerate`, `zip`, `map`...), `keras.ops.convert_to_numpy(t)` (and `K.get_value`,
    `K.eval`), and string formatting that needs the tensor's value: a numeric `%` conversion
    (`"%d" % t`, `"%.3f" % (t,)`), a format spec on the tensor itself (`f"{t:.3f}"`,
    `format(t, ".3f")`, `"{:.3f}".format(t)`), where `t` is a tensor (see CG009 for what counts as
    one). `%s`, `{}` and `f"{t}"` format a symbolic tensor as text and are fine.

    ## Why is this bad?
    AutoGraph does not convert custom-gradient bodies, so under `tf.function` and Keras `fit` they
    run on symbolic tensors, which have no value: `.numpy()` raises `AttributeError: 'SymbolicTensor'
    object has no attribute 'numpy'`, `int()`/`float()` and `range()` raise `TypeError`, `len()`
    raises `TypeError: len is not well defined for a symbolic Tensor`, NumPy (and
    `keras.ops.convert_to_numpy`) raises `NotImplementedError: Cannot convert a symbolic tf.Tensor
    to a numpy array`, iterating raises `OperatorNotAllowedInGraphError`, `"%d" % t` raises
    `TypeError: %d format: a real number is required, not SymbolicTensor` and a format spec raises
    `TypeError: unsupported format string passed to SymbolicTensor.__format__`. All of them work
    eagerly.

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
    tensors (`tf.unstack`, `tf.linalg.slogdet`) may be iterated and are not flagged. Helpers are
    followed as for CG009, those imported from another module of the project included.

    ## Eager-only code
    Silent where graph mode cannot happen, as CG009 describes.
    """

    code = CG010
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def checked(x):
    if x.shape.rank != 1:  # a static test: false when traced with a vector
        raise ValueError(f"expected a vector, got {x.numpy()}")  # the message runs only on that error
    return tf.identity(x), lambda dy: dy

# tf: grad(checked, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

def _scaled(state):
    n = len(state)  # a tuple of loop variables, not a tensor
    return tuple(s * 2.0 / n * n for s in state)

@tf.custom_gradient
def rolled(x):
    def body(i, state):
        return i + 1, _scaled(state)
    _, (y,) = tf.while_loop(lambda i, s: i < 2, body, (0, (x,)))
    return y, lambda dy: dy * 4.0

# tf: grad(rolled, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf


@tf.function
def step(x):
    # converted with step: range(), len() and float() of tensors work here
    @tf.custom_gradient
    def repeat(v):
        y = v
        for _ in range(tf.size(v)):
            y = y * 1.0
        def grad(dy):
            return dy * float(len(v)) / float(tf.size(v))
        return y, grad
    return repeat(x)

# tf: grad(step, [1.0, 2.0]) => both ok
""",
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
        """
import tensorflow as tf

@tf.custom_gradient
def logged(x):
    n = tf.shape(x)[0]
    log = tf.get_logger()
    log.debug("rows %s, width %d, scale %.1f%%" % (n, x.shape[-1], 2.0))  # %s: a tensor as text
    log.debug(f"x={x} width={x.shape[-1]:>4} text={x!s:>10}")  # no spec on the tensor itself
    log.debug("{} {:d} {n}".format(n, x.shape[-1], n=n))
    log.debug("rows %d", x.shape[0])  # lazy: the logger formats a static int, if at all
    return tf.identity(x), lambda dy: dy

# tf: grad(logged, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair(a, b):
    def grad(*args):
        n = len(args)  # the tuple of upstreams: a Python length
        (da, db) = args
        return da * float(n) / 2.0 + db * 0.0, db * float(n) / 2.0 + da * 0.0
    return (a * 1.0, b * 1.0), grad

# tf: grad(pair, [1.0, 2.0], [3.0, 4.0]) => both ok
""",
    )
    INVALID = (
        """
import numpy as np
import tensorflow as tf

def _norm(t):
    return np.linalg.norm(t)  # expect: CG010

@tf.custom_gradient
def unit(x):
    n = tf.norm(x)
    def grad(dy):
        return dy / n * _norm(dy) / _norm(dy)
    return x / n, grad

# tf: grad(unit, [3.0, 4.0]) => eager ok; graph raises Cannot convert a symbolic tf.Tensor
""",
        """
import tensorflow as tf


@tf.function
def step(x):
    @tf.custom_gradient
    def scaled(v):
        def grad(dy):
            return dy * v.numpy()  # expect: CG010
        return v * 2.0, grad
    return scaled(x)

# tf: grad(step, [1.0, 2.0]) => both raises has no attribute 'numpy'
""",
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
        """
import tensorflow as tf

def _peak(t):
    return "peak {:.2f}".format(tf.reduce_max(t))  # expect: CG010

@tf.custom_gradient
def mean_rows(x):
    n = tf.shape(x)[0]
    label = f"{tf.reduce_max(x):.3f}"  # expect: CG010
    def grad(dy):
        tf.get_logger().debug("backward over %d rows, %s" % (n, _peak(dy)))  # expect: CG010
        return tf.ones_like(x) * dy / tf.cast(n, x.dtype)
    return tf.reduce_mean(x, axis=0), grad

# tf: grad(mean_rows, [[1.0], [3.0]]) => eager ok; graph raises unsupported format string passed to SymbolicTensor
""",
        """
import keras
import tensorflow as tf
from tensorflow.keras import backend as K

@tf.custom_gradient
def softplus(x):
    def grad(dy):
        scale = K.get_value(tf.reduce_mean(dy))  # expect: CG010
        return dy * keras.ops.convert_to_numpy(tf.sigmoid(x)) * scale / scale  # expect: CG010
    return tf.math.softplus(x), grad

# tf: grad(softplus, [0.0, 1.0]) => eager ok; graph raises numpy
""",
        """
import tensorflow as tf

@tf.custom_gradient
def clipped_identity(x):
    def grad(*args):
        (upstream,) = args
        size = abs(float(upstream))  # expect: CG010
        return upstream / max(size, 1.0)
    return tf.identity(x), grad

# tf: grad(clipped_identity, 3.0) => eager ok; graph raises float() argument must be
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            context = context_of(ctx.index, record)
            handed = leaves_tensorflow(ctx.index, record)
            if handed and not context.eager_only:
                text = (f"'{record.name}' hands its inputs to NumPy ({', '.join(handed)}): {UNTRACEABLE} (under "
                        f"tf.function .numpy() raises AttributeError and NumPy cannot convert a symbolic "
                        f"tensor){context.traced_note()}; keep it out of traced code, or call it through "
                        f"tf.py_function")
                yield self.finding(ctx, record.line, record.column, text, record.qualname)
                continue
            tensors = graph_tensors(ctx, record)
            report = Reporter(self, ctx, record)
            autograph = converted(ctx, record)
            bodies = [(func, who, tensors) for func, who in graph_bodies(ctx, record)]
            for func, who, facts in bodies + helper_bodies(ctx, record):
                for node, message in self.problems(ctx, func, who, facts, autograph):
                    if finding := report(node, message):
                        yield finding
            yield from helper_leads(self, ctx, record)

    @classmethod
    def problems(cls, ctx: LintContext, func: FuncNode, who: str, facts: Tensors,
                 autograph: str | None) -> Iterator[tuple[cst.CSTNode, str]]:
        """Each Python use of a tensor in one body, with its message (also asked of a helper
        another module defines: cg_lint/rules/lead_answers.py)."""
        for node in body_nodes(func, ctx.index):
            if autograph and _autograph_handles(node) or in_raise(ctx.index, node):
                continue  # an error message runs only when the check above it fails
            message = cls._problem(ctx, facts, node, who)
            if message:
                yield node, message

    @classmethod
    def _problem(cls, ctx: LintContext, tensors: Tensors, node: cst.CSTNode, who: str) -> str | None:
        if type(node) is cst.Call:
            func = node.func
            args = [a.value for a in node.args if not a.star]
            if type(func) is cst.Attribute and func.attr.value == "numpy" and not node.args:
                if tensors.is_tensor(func.value):
                    return (f"{who} calls .numpy() on a tensor ({describe(func.value)}): {GRAPH} tensors are symbolic "
                            f"and this raises AttributeError: 'SymbolicTensor' object has no attribute 'numpy'; "
                            f"compute with TF ops instead")
                return None
            builtin = (type(func) is cst.Name and func.value in _BUILTINS | {"format"}
                       and not ctx.index.enclosing_env_binds(func)
                       and call_name(node, ctx.index.qualnames) == func.value)  # not an import of the same name
            named_format = builtin and func.value == "format"  # type: ignore[attr-defined]
            if named_format or type(func) is cst.Attribute and func.attr.value == "format":
                return cls._formats(call_problem(node, tensors.is_tensor, named_format), who)
            if type(func) is cst.Name and func.value in _BUILTINS:
                return cls._builtin(func.value, args, tensors, who) if builtin else None
            name = call_name(node, ctx.index.qualnames) or ""
            if name in _TO_NUMPY:
                bad = next((a for a in args[:1] if tensors.is_tensor(a)), None)
                if bad is not None:
                    return (f"{who} converts a tensor with {name}() ({describe(bad)}): {GRAPH} this raises "
                            f"NotImplementedError: Cannot convert a symbolic tf.Tensor to a numpy array; compute "
                            f"with ops instead")
                return None
            if name.startswith("numpy.") and not name.startswith(("numpy.float", "numpy.int", "numpy.dtype")):
                bad = next((a for a in args if tensors.is_tensor(a)), None)
                if bad is not None:
                    return (f"{who} passes a tensor ({describe(bad)}) to {name.replace('numpy.', 'np.')}(): {GRAPH} "
                            f"this raises NotImplementedError: Cannot convert a symbolic tf.Tensor to a numpy array; "
                            f"use the tf.math (or tf.experimental.numpy) equivalent")
            return None
        if type(node) in (cst.For, cst.CompFor) and tensors.is_single_tensor(node.iter):
            return cls._iterates(who, node.iter)
        if type(node) is cst.BinaryOperation:
            return cls._formats(percent_problem(node, tensors.is_tensor), who)
        if type(node) is cst.FormattedStringExpression:
            return cls._formats(fstring_problem(node, tensors.is_tensor), who)
        return None

    @staticmethod
    def _formats(problem: tuple[cst.BaseExpression, str, str] | None, who: str) -> str | None:
        if problem is None:
            return None
        tensor, what, error = problem
        return (f"{who} {what} ({describe(tensor)}): {GRAPH} this raises TypeError: {error}; format it without "
                f"a spec ('%s', '{{}}'), or with tf.strings.format / tf.print")

    @classmethod
    def _builtin(cls, fn: str, args: list[cst.BaseExpression], tensors: Tensors, who: str) -> str | None:
        if fn == "range":
            bad = next((a for a in args if tensors.is_tensor(a)), None)
            if bad is None:
                return None
            return (f"{who} calls range() on a tensor ({describe(bad)}): {GRAPH} this raises TypeError: "
                    f"'SymbolicTensor' object cannot be interpreted as an integer; use a static size "
                    f"(x.shape[i]), tf.range, tf.map_fn or tf.while_loop")
        if fn in _ITERATING:
            if fn in ("max", "min") and len(args) != 1:
                return None  # max(a, b) compares a and b: CG009's business
            iterated = args[1:] if fn == "map" else args if fn == "zip" else args[:1]
            bad = next((a for a in iterated if tensors.is_single_tensor(a)), None)
            return cls._iterates(who, bad, fn) if bad is not None else None
        if len(args) != 1:
            return None
        arg = args[0]
        if not tensors.is_tensor(arg):
            return None
        if fn == "len":
            return (f"{who} calls len() on a tensor ({describe(arg)}): {GRAPH} this raises TypeError: len is not "
                    f"well defined for a symbolic Tensor; use the static x.shape[0] or tf.shape(x)[0]")
        return (f"{who} converts a tensor to a Python number with {fn}() ({describe(arg)}): {GRAPH} this raises "
                f"TypeError: {_NUMBERS[fn]}; keep it a tensor (tf.cast) or use a static shape value")

    @staticmethod
    def _iterates(who: str, expr: cst.BaseExpression, builtin: str | None = None) -> str:
        how = f"iterates over a tensor with {builtin}()" if builtin else "iterates over a tensor"
        return (f"{who} {how} ({describe(expr)}): {GRAPH} this raises "
                f"OperatorNotAllowedInGraphError: Iterating over a symbolic tf.Tensor is not allowed; use "
                f"vectorised ops, tf.map_fn, or tf.unstack(x, num=...) with a static size")


def _autograph_handles(node: cst.CSTNode) -> bool:
    """What a converted body may do with a tensor: range(), int(), float(), len() and a for loop
    (tests/tf_behaviour: they work there; .numpy() and NumPy still fail)."""
    if type(node) is cst.For:
        return True
    return (type(node) is cst.Call and type(node.func) is cst.Name
            and node.func.value in ("range", "int", "float", "len"))


# Keras's conversions to NumPy: they read the value, as .numpy() does
_TO_NUMPY = frozenset({f"{keras}.{path}.convert_to_numpy" for keras in ("keras", "tensorflow.keras", "tf_keras")
                       for path in ("ops", "src.ops", "ops.core", "src.ops.core")}
                      | {f"{keras}.backend.{fn}" for keras in ("keras", "tensorflow.keras", "tf_keras")
                         for fn in ("get_value", "eval")})

# builtins CG010 checks: conversions to Python numbers, len, range, and those that iterate
_ITERATING = frozenset({"list", "tuple", "set", "frozenset", "sum", "max", "min", "any", "all", "sorted",
                        "enumerate", "zip", "map", "iter", "reversed"})
_BUILTINS = frozenset({"int", "float", "complex", "len", "range"}) | _ITERATING
