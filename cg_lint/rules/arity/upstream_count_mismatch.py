"""CG002 upstream-count-mismatch: grad's upstream parameters do not match the number of outputs."""

from __future__ import annotations

from collections.abc import Iterator

from cg_lint.analyses.leaves import Counter
from cg_lint.codes import CG002
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule, plural


class UpstreamCountMismatch(Rule):
    """Grad takes a different number of upstream gradients than the function has outputs.

    ## What it does
    When a custom-gradient function returns its outputs as a literal tuple, list or dict, checks that
    its gradient function takes one positional upstream gradient per (flattened) output. Also flags
    a grad with a required keyword-only parameter other than `variables` (`def grad(dy, *, scale)`),
    which TF never passes.

    ## Why is this bad?
    TensorFlow calls `grad_fn(*upstreams)` with one argument per leaf of `nest.flatten(outputs)`
    (and `variables=` when the forward read variables), nothing else. A grad written for one packed
    argument fails with `TypeError: grad() takes 1 positional argument but 2 were given` when the
    gradient is taken, and one that requires another keyword with `TypeError: grad() missing 1
    required keyword-only argument`.

    ## Example
    ```python
    @tf.custom_gradient
    def stats(x):
        def grad(dstats):
            dmean, dvar = dstats
            return dmean / 3.0 + dvar
        return (tf.reduce_mean(x), tf.math.reduce_variance(x)), grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def stats(x):
        def grad(dmean, dvar):
            return dmean / 3.0 + dvar
        return (tf.reduce_mean(x), tf.math.reduce_variance(x)), grad
    ```

    ## Fix safety
    No automatic fix: the body of grad has to be rewritten for separate arguments.

    ## Known limitations
    Outputs that are not literal structures (a name bound to a helper's result) are not counted.
    `grad(*upstream)` accepts any number.
    """

    code = CG002
    VALID = (
        """
import keras

@keras.ops.custom_gradient
def doubled(x):
    def grad(*args, upstream=None):  # Keras's portable form: TF passes the upstream positionally
        if upstream is None:
            (upstream,) = args
        return upstream * 2.0
    return x * 2.0, grad

# tf: grad(doubled, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(*dys):
        return tf.add_n(list(dys))
    return (x, x * 2.0), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(da, db, dc, variables=None):
        return da + db + dc
    return {"a": x, "b": (x, x)}, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy, unused=None):
        return dy
    return x, grad
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy):  # expect: CG002
        return dy
    return (x, x * 2.0), grad
""",
        """
import tensorflow as tf

class Layer:
    @tf.custom_gradient
    def call(self, x):
        return [x, x, x], self._grad

    def _grad(self, dy):  # expect: CG002
        return dy
""",
        """
import tensorflow as tf

@tf.custom_gradient
def scaled(x):
    def grad(dy, *, scale):  # expect: CG002
        return dy * scale
    return x * 2.0, grad

# tf: grad(scaled, [1.0, 2.0]) => both raises missing 1 required keyword-only argument: 'scale'
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        seen = set()
        for record in ctx.records:
            for grad in record.grads:
                for param in grad.signature.kwonly:
                    if param.has_default or param.name == "variables":
                        continue  # a required `variables` is CG004's business
                    yield self.finding(ctx, grad.line, grad.column, (
                        f"grad of '{record.name}' requires the keyword-only parameter '{param.name}', which TF never "
                        f"passes (only the upstream gradients, and 'variables'): when the gradient is taken, eagerly "
                        f"and under tf.function, this raises TypeError: missing 1 required keyword-only argument: "
                        f"'{param.name}'; give it a default or bind it in a closure"), record.qualname)
            counter = Counter(ctx.index.env_for(record.node), ctx.index.qualnames, record.structured_params)
            for fr in record.returns:
                grad = fr.grad  # type: ignore[assignment]
                if grad is None or fr.outputs is None:
                    continue
                n = counter.count(fr.outputs)
                if n is None:
                    continue
                upstream = grad.upstream
                low = sum(1 for p in upstream if not p.has_default)
                high = None if grad.signature.varargs is not None else len(upstream)
                if n >= low and (high is None or n <= high):
                    continue
                key = (grad.line, n)
                if key in seen:
                    continue
                seen.add(key)
                names = ", ".join(p.name for p in upstream) or "none"
                yield self.finding(
                    ctx, grad.line, grad.column,
                    f"grad of '{record.name}' takes {plural(len(upstream), 'upstream gradient')} ({names}) but "
                    f"'{record.name}' returns {plural(n, 'output')}; TF calls it with one upstream per output",
                    record.qualname,
                )
