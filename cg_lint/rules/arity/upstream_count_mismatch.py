"""CG002 upstream-count-mismatch: grad's upstream parameters do not match the number of outputs."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import Counter
from cg_lint.codes import CG002
from cg_lint.findings import Finding
from cg_lint.model.records import GradFn, Param
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
import functools
import tensorflow as tf

def _scaled_grad(scale, d_scaled, d_x):
    return d_scaled * scale + d_x

@tf.custom_gradient
def scaled(x):
    return (x * 3.0, x), functools.partial(_scaled_grad, 3.0)  # two upstreams after the bound scale

# tf: grad(scaled, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def stats(x):
    out = {"mean": tf.reduce_mean(x), "max": tf.reduce_max(x)}
    def grad(d_max, d_mean):  # sorted-key order, as TF flattens the dict
        return d_mean * tf.ones_like(x) / 2.0 + d_max * tf.one_hot(tf.argmax(x), 2)
    return out, grad

# tf: grad(lambda x: stats(x)["mean"], [1.0, 3.0]) => both ok [0.5, 0.5]
""",
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
import functools
import tensorflow as tf

def _scaled_grad(scale, dy):
    return dy * scale

@tf.custom_gradient
def scaled(x):
    # partial binds scale: grad takes one upstream, the forward has two outputs
    return (x * 3.0, x), functools.partial(_scaled_grad, 3.0)  # expect: CG002

# tf: grad(scaled, [1.0, 2.0]) => both raises takes 2 positional arguments but 3 were given
""",
        """
import collections
import tensorflow as tf

Bounds = collections.namedtuple("Bounds", ["low", "high"])

@tf.custom_gradient
def around(x):
    def grad(d):  # expect: CG002
        return d
    return Bounds(x - 1.0, x + 1.0), grad  # a namedtuple: one output per field

# tf: grad(around, [1.0, 2.0]) => both raises takes 1 positional argument but 2 were given
""",
        """
import tensorflow as tf

@tf.custom_gradient
def stats(x):
    out = {"mean": tf.reduce_mean(x), "max": tf.reduce_max(x)}
    def grad(d_mean, d_max):  # expect: CG002
        return d_mean * tf.ones_like(x) / 2.0 + d_max * tf.one_hot(tf.argmax(x), 2)
    return out, grad

# tf: grad(lambda x: stats(x)["mean"], [1.0, 3.0]) => both wrong [[0.5, 0.5]]
""",
        """
import tensorflow as tf

@tf.custom_gradient
def halves(x):
    def grad(d_half):  # expect: CG002
        return tf.concat([d_half, d_half], 0)
    return tf.split(x, 2), grad  # a list of two tensors: two outputs

# tf: grad(halves, [1.0, 2.0]) => both raises takes 1 positional argument but 2 were given
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair(x):
    def grad(*args):  # expect: CG002
        (dy,) = args
        return dy * 3.0
    return (x, x * 2.0), grad

# tf: grad(pair, [1.0, 2.0]) => both raises too many values to unpack
""",
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
                unpacked = _unpacked_varargs(ctx, grad)
                if unpacked is not None and unpacked != n and (grad.line, n) not in seen:
                    seen.add((grad.line, n))
                    yield self.finding(ctx, grad.line, grad.column, (
                        f"grad of '{record.name}' unpacks its upstreams ({grad.signature.varargs.name}) into "  # type: ignore[union-attr]
                        f"{plural(unpacked, 'name')} but '{record.name}' returns {plural(n, 'output')}: TF passes "
                        f"one upstream per output, so the unpacking raises ValueError when the gradient is taken, "
                        f"eagerly and under tf.function"), record.qualname)
                    continue
                order = _key_order(ctx, fr.outputs, upstream)
                if order is not None:
                    named, keys = order
                    yield self.finding(ctx, grad.line, grad.column, (
                        f"grad of '{record.name}' names its upstreams after the output keys in insertion order "
                        f"({named}), but TF flattens a dict output in sorted-key order ({keys}): each upstream "
                        f"lands in another key's parameter and the gradient is silently wrong, eagerly and under "
                        f"tf.function; order the parameters by sorted key, or return a tuple"), record.qualname)
                    continue
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


def _unpacked_varargs(ctx: LintContext, grad: GradFn) -> int | None:
    """``def grad(*args): (dy,) = args`` (also under ``if upstream is None:``, Keras's portable form):
    the number of names the upstreams are unpacked into, when grad does that and takes nothing else."""
    star = grad.signature.varargs
    if star is None or grad.upstream or type(grad.node) is not cst.FunctionDef:
        return None
    for node in ctx.index.walk.own_nodes(grad.node):
        if type(node) is not cst.Assign or type(node.value) is not cst.Name or node.value.value != star.name:
            continue
        for target in node.targets:
            elements = getattr(target.target, "elements", None)
            if type(target.target) in (cst.Tuple, cst.List) and elements is not None and not any(
                    type(e) is cst.StarredElement for e in elements):
                return len(elements)
    return None


_GRAD_PREFIXES = ("grad_", "d_", "g_", "upstream_", "dy_", "d")


def _key_order(ctx: LintContext, outputs: cst.BaseExpression, upstream: list[Param]) -> tuple[str, str] | None:
    """A dict output written in an order that is not sorted, and upstream parameters named after
    its keys in that written order: (the parameters, the keys in TF's order)."""
    value = outputs
    if type(value) is cst.Name:
        owner = ctx.index.enclosing(value, (cst.FunctionDef, cst.Lambda))
        bound = ctx.index.env_for(owner).lookup(value.value) or []
        value = bound[0] if len(bound) == 1 and isinstance(bound[0], cst.BaseExpression) else value
    if type(value) is not cst.Dict or len(upstream) != len(value.elements) or len(upstream) < 2:
        return None
    keys = []
    for element in value.elements:
        if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
            return None
        keys.append(str(element.key.evaluated_value))
    if keys == sorted(keys):
        return None
    stems = [_stem(p.name, keys) for p in upstream]
    if stems != keys:
        return None
    return ", ".join(p.name for p in upstream), ", ".join(sorted(keys))


def _stem(name: str, keys: list[str]) -> str | None:
    """The key a parameter is named after (``d_mean``, ``grad_mean``, ``dmean`` -> ``mean``)."""
    if name in keys:
        return name
    for prefix in _GRAD_PREFIXES:
        if name.startswith(prefix) and name[len(prefix):] in keys:
            return name[len(prefix):]
    return None
