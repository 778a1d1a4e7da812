"""CG016 numpy-kernel-dtype: a tf.numpy_function kernel returns float64 where Tout says float32."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.numpy_dtypes import F64, PYFLOAT, NumpyDtypes
from cg_lint.analyses.tensors import body_nodes, return_values
from cg_lint.codes import CG016
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH, Reporter, graph_bodies, helper_bodies
from cg_lint.syntax.index import FileIndex

# tf.py_function converts its kernel's results to Tout itself; numpy_function (and py_func) do not
_NUMPY_FUNCTIONS = frozenset({"tensorflow.numpy_function", "tensorflow.compat.v1.numpy_function",
                              "tensorflow.compat.v1.py_func", "tensorflow.py_func"})
_FLOAT32 = frozenset({"tensorflow.float32", "tensorflow.dtypes.float32", "tensorflow.compat.v1.float32",
                      "numpy.float32"})


class NumpyKernelDtype(Rule):
    """A `tf.numpy_function` kernel returns float64 while `Tout` says float32.

    ## What it does
    Flags a `tf.numpy_function` call in a custom gradient (the forward, grad, the functions nested
    in them and the file's helpers they call) whose `Tout` is `tf.float32` while its kernel (a
    function of the file or a lambda) surely returns float64 there: a NumPy constructor without
    `dtype` (`np.zeros`, `np.ones`, `np.empty`, `np.eye`, `np.array([0.5, 1.0])`, `np.full(n, 0.5)`,
    `np.arange(0.0, 1.0)`, `np.linspace(0, 1)`), a sampler of `np.random` (`np.random.normal`,
    `np.random.rand`, `np.random.default_rng(0).uniform`...), `np.float64(...)`, a bare Python
    float (`return 0.0`, `float(a.sum())`), or arithmetic with any of these. NumPy 2's promotion
    rules (NEP 50) decide: a Python float is *weak* (`a * 0.5` keeps `a`'s float32), a float64 array
    or NumPy scalar is *strong* (`a * np.ones(3)`, `a * np.float64(0.5)` and `a * np.array(0.5)` are
    float64). What the kernel does with its parameters alone is never flagged: their dtype is the
    caller's.

    ## Why is this bad?
    When traced, `tf.numpy_function` checks the kernel's results against `Tout` and raises
    `InvalidArgumentError: 0-th value returned by pyfunc_0 is double, but expects float` when the
    graph runs (inside `tf.function`, Keras `fit`, `tf.data`). Eagerly it does not check: the call
    silently returns a float64 tensor, so a unit test passes. (`tf.py_function` converts its
    kernel's results to `Tout` in both modes and is not flagged.)

    ## Example
    ```python
    def _noise(x):
        return x + np.random.normal(scale=0.1, size=x.shape)

    @tf.custom_gradient
    def noisy(x):
        y = tf.numpy_function(_noise, [x], tf.float32)
        return y, lambda dy: dy
    ```

    ## Use instead
    ```python
    def _noise(x):
        return x + np.random.normal(scale=0.1, size=x.shape).astype(np.float32)

    @tf.custom_gradient
    def noisy(x):
        y = tf.numpy_function(_noise, [x], tf.float32)
        return y, lambda dy: dy
    ```

    ## Fix safety
    No automatic fix: whether to compute in float32 (`dtype=np.float32`) or to cast the result
    (`.astype(np.float32)`) is the author's choice.

    ## Known limitations
    Only kernels defined in the file (a def, a lambda, or `functools.partial` of a def) and only
    `Tout` spelled as float32 (not `x.dtype`) are checked; a kernel that calls TensorFlow, or whose
    result depends on its parameters' dtypes, is left alone.
    """

    code = CG016
    VALID = (
        """
import numpy as np
import tensorflow as tf

def _scale(a):
    return a * 0.5 + 1  # Python numbers are weak: a float32 array stays float32

def _ones(a):
    return np.ones(a.shape, dtype=np.float32) * np.float32(2.0)

def _noise(a):
    return a + np.random.default_rng(0).standard_normal(a.shape, np.float32)

def _sum(a):
    out = np.zeros(a.shape, np.float32)
    out += np.ones(a.shape)  # in place: out stays float32
    return out

@tf.custom_gradient
def kernels(x):
    y = tf.numpy_function(_scale, [x], tf.float32) + tf.numpy_function(_ones, [x], tf.float32)
    z = tf.numpy_function(_noise, [x], tf.float32) * 0.0 + tf.numpy_function(_sum, [x], tf.float32)
    return y + z, lambda dy: dy * 0.5

# tf: grad(kernels, [1.0, 2.0]) => both ok [0.5, 0.5]
""",
        """
import numpy as np
import tensorflow as tf

def _double(a):
    return np.exp(a) * np.ones(a.shape)  # float64, and Tout says so

@tf.custom_gradient
def wide(x):
    y = tf.numpy_function(_double, [x], tf.float64)
    z = tf.py_function(lambda a: np.ones(3), [x], tf.float32)  # py_function converts to Tout
    return tf.cast(y, tf.float32) * 0.0 + z + x, lambda dy: dy

# tf: grad(wide, [1.0, 2.0, 3.0]) => both ok [1.0, 1.0, 1.0]
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def f(x):
    y = tf.numpy_function(lambda a: a * np.float32(2.0), [x], Tout=x.dtype)  # Tout follows x
    return y, lambda dy: dy * 2.0
""",
        """
import numpy as np
import tensorflow as tf

def _split(a):
    return a * 2.0, np.linspace(0.0, 1.0, a.size)  # the float64 goes where Tout says float64

@tf.custom_gradient
def halves(x):
    doubled, ramp = tf.numpy_function(_split, [x], [tf.float32, tf.float64])
    return doubled + tf.cast(ramp, tf.float32) * 0.0, lambda dy: dy * 2.0

# tf: grad(halves, [1.0, 2.0]) => both ok [2.0, 2.0]
""",
    )
    INVALID = (
        """
import numpy as np
import tensorflow as tf

def _noise(a):
    return a + np.random.normal(scale=0.1, size=a.shape)

@tf.custom_gradient
def noisy(x):
    y = tf.numpy_function(_noise, [x], tf.float32)  # expect: CG016
    return y, lambda dy: dy

# tf: call(noisy, [1.0, 2.0]) => eager ok; graph raises is double, but expects float
# tf: grad(noisy, [1.0, 2.0]) => eager ok [1.0, 1.0]; graph raises is double, but expects float
""",
        """
import numpy as np
import tensorflow as tf

def _mask(a):
    m = np.zeros(a.shape)
    m[a > 0] = 1.0
    return m

@tf.custom_gradient
def relu(x):
    def grad(dy):
        return dy * tf.numpy_function(_mask, [x], tf.float32)  # expect: CG016
    return tf.nn.relu(x), grad

# tf: grad(relu, [-1.0, 2.0]) => eager raises cannot compute Mul; graph raises is double, but expects float
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def scaled(x):
    y = tf.numpy_function(lambda a: a * np.float64(0.5), [x], tf.float32)  # expect: CG016
    w = tf.numpy_function(lambda a: float(a.sum()), [x], "float32")  # expect: CG016
    return y + w, lambda dy: dy * 0.5
""",
        """
import numpy as np
import tensorflow as tf

def _split(a):
    ramp = np.linspace(0.0, 1.0, a.size)
    return a * 2.0, ramp

@tf.custom_gradient
def halves(x):
    doubled, ramp = tf.numpy_function(_split, [x], [tf.float32, tf.float32])  # expect: CG016
    return doubled + ramp * 0.0, lambda dy: dy * 2.0

# tf: grad(halves, [1.0, 2.0]) => eager raises AddV2; graph raises 1-th value returned by pyfunc
""",
        """
import numpy as np
import tensorflow as tf

def _ramp(a):
    return np.linspace(0.0, 1.0, a.size)  # float64: its ends are Python numbers

def _apply(v):
    return v * tf.numpy_function(_ramp, [v], tf.float32)  # expect: CG016

@tf.custom_gradient
def ramped(x):
    return _apply(x), lambda dy: dy

# tf: call(ramped, [1.0, 2.0]) => eager raises cannot compute Mul; graph raises is double, but expects float
""",
        """
import functools
import numpy as np
import tensorflow as tf

def _noise(a, scale):
    return a + scale * np.random.normal(size=a.shape)  # float64 whatever scale is

@tf.custom_gradient
def noisy(x):
    y = tf.numpy_function(functools.partial(_noise, scale=0.0), [x], tf.float32)  # expect: CG016
    return y, lambda dy: dy

# tf: call(noisy, [1.0, 2.0]) => eager ok [1.0, 2.0]; graph raises is double, but expects float
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            report = Reporter(self, ctx, record)
            bodies = [(func, who) for func, who in graph_bodies(ctx, record)]
            if bodies:
                bodies += [(func, who) for func, who, _ in helper_bodies(ctx, record)]
            for func, who in bodies:
                for node in body_nodes(func, ctx.index):
                    if type(node) is not cst.Call or call_name(node, ctx.index.qualnames) not in _NUMPY_FUNCTIONS:
                        continue
                    problem = _float64_result(ctx.index, node)
                    if problem is None:
                        continue
                    kernel, returned = problem
                    finding = report(node, (
                        f"{who} calls tf.numpy_function with Tout float32, but its kernel {kernel} returns "
                        f"float64 ({returned}): {GRAPH} this raises InvalidArgumentError '0-th value returned by "
                        f"pyfunc is double, but expects float' (eagerly the result is silently float64); "
                        f"return .astype(np.float32) or build the array with dtype=np.float32"))
                    if finding:
                        yield finding


def _float64_result(index: FileIndex, call: cst.Call) -> tuple[str, str] | None:
    """(kernel, the float64 value it returns) when ``Tout`` is float32 and the kernel surely
    returns float64 (for a list ``Tout``, at a position that says float32)."""
    kernel_arg = _arg(call, 0, "func")
    tout = _arg(call, 2, "Tout")
    if kernel_arg is None or tout is None:
        return None
    partial = type(kernel_arg) is cst.Call and call_name(kernel_arg, index.qualnames) == "functools.partial"
    if partial and kernel_arg.args:  # type: ignore[union-attr]
        kernel_arg = kernel_arg.args[0].value  # type: ignore[union-attr] # bound arguments: unknown either way
    if type(kernel_arg) is cst.Lambda:
        kernel: cst.FunctionDef | cst.Lambda = kernel_arg
        returns = [kernel_arg.body]
        label = "(a lambda)"
    elif type(kernel_arg) is cst.Name:
        found = index.lookup_function(kernel_arg)
        if len(found) != 1 or type(found[0]) is not cst.FunctionDef or found[0].decorators:
            return None
        kernel = found[0]
        returns = return_values(index, kernel)
        label = f"'{kernel.name.value}'"
    else:
        return None
    if not returns or _calls_tensorflow(index, kernel):
        return None
    listed = type(tout) in (cst.List, cst.Tuple)
    wanted = [_is_float32(index, e.value) for e in tout.elements] if listed else None  # type: ignore[attr-defined]
    dtypes = NumpyDtypes(index)
    for value in returns:
        if wanted is None:
            if _is_float32(index, tout) and dtypes.of(value) in (F64, PYFLOAT):
                return label, describe(value)
            continue
        if type(value) not in (cst.Tuple, cst.List) or len(value.elements) != len(wanted):  # type: ignore[attr-defined]
            continue
        for element, float32 in zip(value.elements, wanted):  # type: ignore[attr-defined]
            if float32 and dtypes.of(element.value) in (F64, PYFLOAT):
                return label, describe(element.value)
    return None


def _arg(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional[:position + 1]):
        return None
    return positional[position].value if position < len(positional) else None


def _is_float32(index: FileIndex, expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.SimpleString:
        return expr.evaluated_value == "float32"
    return bool(index.qualnames(expr) & _FLOAT32)


def _calls_tensorflow(index: FileIndex, kernel: cst.FunctionDef | cst.Lambda) -> bool:
    """A kernel that uses TensorFlow may mix tensors in, whose conversion rules differ."""
    nodes = index.walk.function_nodes(kernel)
    return any(type(n) in (cst.Name, cst.Attribute) and any(q.startswith("tensorflow") for q in index.qualnames(n))
               for n in nodes)
