"""CG012 input-used-as-python-value: a positional input used as a Python value."""

from __future__ import annotations

from collections.abc import Iterator

from cg_lint.codes import CG012
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH, converted, Reporter, graph_bodies, python_values

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
