"""CG012 input-used-as-python-value: a positional input used as a Python value."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.tensors import statement_of
from cg_lint.codes import CG012
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH, converted, Reporter, graph_bodies, python_values

# methods that make an object convertible to a tensor (or a sequence TF may flatten or convert)
_CONVERTIBLE = frozenset({"__array__", "__tf_tensor__", "__float__", "__int__", "__index__", "__complex__",
                          "__iter__", "__len__", "__getitem__"})

class InputUsedAsPythonValue(Rule):
    """A positional input of a custom gradient is used as a Python value (`if training:`, `range(n)`).

    ## What it does
    Flags positional inputs of a custom-gradient function that the forward, grad, or a function
    nested in them uses only as Python values: truth-tested (`if training:`, `not flag`,
    `mode == "train"`), or passed to `range()`, `int()`, `float()`, `bool()`, `max()` or `min()`.
    Inputs also used as tensors are left to CG009/CG010. Also flags calls in the same file that
    pass an instance of a plain class of the file (`flip(x, FlipConfig())`) as a positional input:
    TF cannot convert it to a tensor, eagerly or under `tf.function`.

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
        """
import tensorflow as tf

class Scale:
    def __init__(self, value):
        self.value = value

    def __tf_tensor__(self, dtype=None, name=None):  # how TF converts it
        return tf.constant(self.value, dtype=dtype or tf.float32)

@tf.custom_gradient
def scaled(x, s):
    return x * s, lambda dy: (dy * s, None)

def apply(x):
    return scaled(x, Scale(2.0))

# tf: grad(apply, [1.0, 2.0]) => both ok
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
        """
import tensorflow as tf

class FlipConfig:
    factor = 0.5

@tf.custom_gradient
def flip(x, cfg):
    factor = cfg.factor
    return tf.identity(x), lambda dy: (-factor * dy, None)

def apply(x):
    cfg = FlipConfig()
    return flip(x, cfg)  # expect: CG012

# tf: grad(apply, [1.0, 2.0]) => eager raises unsupported type; graph raises Failed to convert
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            report = Reporter(self, ctx, record)
            running = {id(func) for func, _ in graph_bodies(ctx, record)}
            autograph = converted(ctx, record)
            for name, uses in python_values(ctx, record).items():
                for node, how in uses:
                    if id(ctx.index.owner(node)) not in running or autograph and how != "bool()":
                        continue  # a converted body turns the rest into graph control flow
                    error = ("TypeError" if how.endswith("()") and how not in ("bool()", "max()", "min()")
                             else "OperatorNotAllowedInGraphError")
                    finding = report(node, (
                        f"'{record.name}' uses its positional input '{name}' as a Python value ({how}): {GRAPH} "
                        f"TF converts positional inputs to tensors before the body runs, so this raises {error}; "
                        f"bind '{name}' in a closure (a factory function) instead of passing it"))
                    if finding:
                        yield finding
            yield from self._objects_passed(ctx, record)

    def _objects_passed(self, ctx: LintContext, record) -> Iterator[Finding]:
        """Calls that pass an instance of a plain class of this file as a positional input."""
        params = record.signature.positional
        for site in record.call_sites:
            if site.has_star or site.via_partial:
                continue
            for i, arg in enumerate(site.positional):
                cls = _plain_instance(ctx, arg.value)
                if cls is None:
                    continue
                name = f" '{params[i].name}'" if i < len(params) else ""
                line, column = ctx.position(statement_of(ctx.index, site.node))
                yield self.finding(ctx, line, column, (
                    f"'{record.name}' is called with a {cls} object as its positional input{name}: TF converts "
                    f"every positional input to a tensor before the body runs, and this raises (ValueError "
                    f"eagerly, TypeError under tf.function: a {cls} has no tensor value); bind it in a closure "
                    f"(a factory function) instead of passing it"), record.qualname)
                break


def _plain_instance(ctx: LintContext, expr: cst.BaseExpression) -> str | None:
    """The class name when ``expr`` makes (or names, bound once) an instance of a plain class of this
    file: no decorators (attrs classes are flattened by tf.nest), no base but ``object``, and no
    method that lets TF convert or flatten it."""
    if type(expr) is cst.Name:
        values = ctx.index.lookup_function(expr)
        if len(values) != 1 or type(values[0]) is not cst.Call:
            return None
        expr = values[0]
    if type(expr) is not cst.Call or type(expr.func) is not cst.Name:
        return None
    classes = ctx.index.lookup_function(expr.func)
    if len(classes) != 1 or type(classes[0]) is not cst.ClassDef:
        return None
    cls = classes[0]
    if cls.decorators or any(type(b.value) is not cst.Name or b.value.value != "object" for b in cls.bases):
        return None
    if type(cls.body) is not cst.IndentedBlock or _stub(cls.body):
        return None  # `...`: also what the prefilter leaves of a class it keeps only for its name
    for stmt in cls.body.body:
        if type(stmt) is cst.FunctionDef and stmt.name.value in _CONVERTIBLE:
            return None
    return cls.name.value


def _stub(body: cst.IndentedBlock) -> bool:
    stmts = body.body
    if len(stmts) != 1 or type(stmts[0]) is not cst.SimpleStatementLine:
        return False
    small = stmts[0].body
    return len(small) == 1 and type(small[0]) is cst.Expr and type(small[0].value) is cst.Ellipsis
