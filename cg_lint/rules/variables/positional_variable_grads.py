"""CG007 positional-variable-grads: variable gradients listed by position."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import libcst as cst

from cg_lint.codes import CG007
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.variables.variables_shared import literal_elements, pair_grads, resolved_literal, statement_position


class PositionalVariableGrads(Rule):
    """Variable gradients listed by position (`[g_w, g_b]`) instead of matched to `variables`.

    ## What it does
    Flags a grad that returns its variable gradients as a literal list of two or more different
    entries, when the forward reads variables; and one that looks them up by a short weight name
    (`{"kernel": g_k, "bias": g_b}[v.name]`, or `.get(v.name)`, for `v` in `variables`).

    ## Why is this bad?
    The order of `variables` is not the order in which the forward reads them. Eagerly it comes from
    a set and changes from run to run; under `tf.function` it is sorted by variable name. A list
    written in read order silently sends each gradient to the wrong variable (no error; the optimizer
    then trains with wrong gradients).

    ## Example
    ```python
    w = tf.Variable(2.0, name="w")
    b = tf.Variable(1.0, name="b")

    @tf.custom_gradient
    def affine(x):
        def grad(dy, variables=None):
            return dy * 2.0, [tf.reduce_sum(dy * x), tf.reduce_sum(dy)]
        return x * w + b, grad
    ```

    ## Use instead
    ```python
    w = tf.Variable(2.0, name="w")
    b = tf.Variable(1.0, name="b")

    @tf.custom_gradient
    def affine(x):
        def grad(dy, variables=None):
            by_var = {w.ref(): tf.reduce_sum(dy * x), b.ref(): tf.reduce_sum(dy)}
            return dy * 2.0, [by_var[v.ref()] for v in variables]
        return x * w + b, grad
    ```

    ## Fix safety
    No automatic fix.

    ## Known limitations
    Lists built in a loop (`grads.append(...)`) in read order are not detected, nor dicts keyed by
    a Keras 3 weight's `.name` (`{self.kernel.name: ...}`, a short name too).
    """

    code = CG007
    VALID = (
        """
import tensorflow as tf

hi = tf.Variable(1.0, name="max_w")
lo = tf.Variable(2.0, name="min_w")

@tf.custom_gradient
def spread(x):
    def grad(dy, variables=None):
        d_hi, d_lo = tf.reduce_sum(dy * x), tf.reduce_sum(2.0 * dy * x)
        if "max" in variables[0].name:  # the names decide the order
            return dy * (hi + 2.0 * lo), [d_hi, d_lo]
        return dy * (hi + 2.0 * lo), [d_lo, d_hi]
    return x * hi + 2.0 * x * lo, grad

# tf: var_grads(spread, [1.0, 2.0], [hi, lo]) => both ok
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)
b = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        var_grads = [tf.reduce_sum(dy * x) if v is w else tf.reduce_sum(dy) for v in variables]
        return dy * 2.0, var_grads
    return x * w + b, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)
b = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return dy, [None, None]  # identical entries: the order does not matter
    return x * w + b, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0)

@tf.custom_gradient
def f(x):
    def grad(dy, variables=None):
        return dy, [tf.reduce_sum(dy * x)]  # one variable: nothing to mix up
    return x * w, grad
""",
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")

@tf.custom_gradient
def scaled(x):
    def grad(dy, variables=None):
        by_name = {"w:0": tf.reduce_sum(dy * x)}  # the full name TF's variables carry
        by_ref = {w.ref(): tf.reduce_sum(dy * x)}
        return dy * w, [by_name[v.name] + 0.0 * by_ref[v.ref()] for v in variables]
    return x * w, grad

# tf: var_grads(scaled, [1.0, 2.0], [w]) => both ok [3.0]
""",
    )
    INVALID = (
        """
import keras
import tensorflow as tf

class Affine(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(), initializer="ones", name="w")
        self.b = self.add_weight(shape=(), initializer="zeros", name="a_bias")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            def grad(dy, variables=None):
                table = {id(self.w.value): tf.reduce_sum(dy * v), id(self.b.value): tf.reduce_sum(dy) * 3.0}
                return dy * self.w, [table[id(u.value)] for u in self.trainable_variables]  # expect: CG007
            return v * self.w + self.b * 3.0, grad
        return f(x)

layer = Affine()
layer.build(())  # trainable_variables: [w, a_bias]; under tf.function TF sorts them by name

def use(x):
    return layer(x)

# tf: var_grads(use, [1.0, 2.0], layer.trainable_variables) => graph wrong [3.0, 6.0]
""",
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")
b = tf.Variable(1.0, name="b")

@tf.custom_gradient
def affine(x):
    def grad(dy, variables=None):
        return dy * 2.0, [tf.reduce_sum(dy * x), tf.reduce_sum(dy)]  # expect: CG007
    return x * w + b, grad
""",
        """
import tensorflow as tf

class Affine(tf.Module):
    def __init__(self):
        self.w = tf.Variable(2.0)
        self.b = tf.Variable(1.0)

    def __call__(self, x):
        @tf.custom_gradient
        def f(x):
            def grad(dy, variables=None):
                g_w, g_b = tf.reduce_sum(dy * x), tf.reduce_sum(dy)
                var_grads = [g_w, g_b]
                return dy, var_grads  # expect: CG007
            return x * self.w + self.b, grad
        return f(x)
""",
        """
import keras
import tensorflow as tf

class Affine(keras.layers.Layer):
    def build(self, shape):
        self.kernel = self.add_weight(shape=(), initializer="ones", name="kernel")
        self.bias = self.add_weight(shape=(), initializer="zeros", name="bias")

    def call(self, x):
        @tf.custom_gradient
        def f(v):
            def grad(dy, variables=None):
                by_name = {"kernel": tf.reduce_sum(dy * v), "bias": tf.reduce_sum(dy)}
                return dy * self.kernel, [by_name[u.name] for u in variables]  # expect: CG007
            return v * self.kernel + self.bias, grad
        return f(x)

layer = Affine()
layer.build(())

def use(x):
    return layer(x)

# tf: var_grads(use, [1.0, 2.0], layer.trainable_variables) => both raises KeyError: 'affine
""",
        """
import tensorflow as tf

w = tf.Variable(2.0, name="w")

@tf.custom_gradient
def scaled(x):
    def grad(dy, variables=None):
        by_name = {"w": tf.reduce_sum(dy * x)}
        return dy * w, [by_name.get(v.name) for v in variables]  # expect: CG007
    return x * w, grad

# tf: var_grads(scaled, [1.0, 2.0], [w]) => both wrong [3.0]
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        module = cst.Module(body=[])
        for record in ctx.records:
            for grad in pair_grads(record):
                for node, keys in _short_name_lookups(ctx, grad.node):
                    line, column = statement_position(ctx, node)
                    how = "gives those variables no gradient (None)" if type(node) is cst.Call else (
                        "raises KeyError")
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' looks its variable gradients up by name "
                        f"({describe(cast(cst.BaseExpression, node))}) in a "
                        f"dict keyed by short names ({keys}), but the variables TF passes are tf.Variables named "
                        f"in full ('layer/kernel:0'), never a Keras weight's short name: this {how}, eagerly and "
                        f"under tf.function; key the dict by v.ref() (w.ref() for each weight) or match v is w"),
                        record.qualname)
                for site in grad.returns:
                    elements = literal_elements(resolved_literal(site.value, ctx))
                    if elements is None or len(elements) != 2:
                        continue
                    var_grads = resolved_literal(elements[1], ctx)
                    other = _iterates_other_order(ctx, var_grads)
                    if other is not None:
                        line, column = statement_position(ctx, site.anchor)
                        yield self.finding(ctx, line, column, (
                            f"grad of '{record.name}' orders its variable gradients by {other}, but TF matches "
                            f"them to 'variables', which it passes in an arbitrary order eagerly and sorted by "
                            f"name under tf.function: gradients silently go to the wrong variables; iterate "
                            f"variables instead (for v in variables)"), record.qualname)
                        continue
                    entries = literal_elements(var_grads) if type(var_grads) is cst.List else None
                    if entries is None or len(entries) < 2:
                        continue
                    if len({module.code_for_node(e) for e in entries}) == 1:
                        continue
                    if _ordered_by_test(ctx, grad.node, site.anchor):
                        continue  # `if "max" in variables[0].name:` / `if variables[0] is w:` picks the order
                    line, column = statement_position(ctx, site.anchor)
                    listed = describe(cast(cst.List, var_grads))
                    yield self.finding(ctx, line, column, (
                        f"grad of '{record.name}' lists {len(entries)} variable gradients by position "
                        f"({listed}): TF passes 'variables' in an arbitrary order eagerly and sorted "
                        f"by name under tf.function, so gradients silently go to the wrong variables; match each "
                        f"v in variables by identity (v is w, or a dict keyed by v.ref())"), record.qualname)


def _ordered_by_test(ctx: LintContext, grad: cst.CSTNode, node: cst.CSTNode) -> bool:
    """grad branches on the variables themselves (an ``if`` or conditional expression whose test
    looks at their names, identities or refs): the test decides which list is returned, the
    returns under it and the one after it alike."""
    key = ("ordered-by-test", id(grad))
    if key not in ctx.cache:
        ctx.cache[key] = any(type(n) in (cst.If, cst.IfExp) and _reads_variables(ctx, n.test)  # type: ignore[attr-defined]
                             for n in ctx.index.walk.walk(grad))
    return bool(ctx.cache[key])


def _reads_variables(ctx: LintContext, test: cst.BaseExpression) -> bool:
    """The test subscripts or iterates ``variables`` (``variables[0].name``, ``variables[1] is w``,
    ``any(v is w for v in variables)``)."""
    for node in ctx.index.walk.walk(test):
        if type(node) is cst.Subscript and type(node.value) is cst.Name and node.value.value == "variables":
            return True
        if type(node) is cst.CompFor and type(node.iter) is cst.Name and node.iter.value == "variables":
            return True
    return False


def _short_name_lookups(ctx: LintContext, grad: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, str]]:
    """``table[v.name]`` / ``table.get(v.name)`` for ``v`` iterating ``variables``, where ``table``
    is a dict literal keyed only by strings without ``:`` (a variable's name always has one)."""
    for node in ctx.index.walk.walk(grad):
        if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            table, key = node.value, node.slice[0].slice.value
        elif (type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "get"
              and node.args and node.args[0].keyword is None):
            table, key = node.func.value, node.args[0].value
        else:
            continue
        if type(key) is not cst.Attribute or key.attr.value != "name" or type(key.value) is not cst.Name:
            continue
        if not _iterates_variables(ctx, key.value):
            continue
        keys = _short_keys(ctx, table)
        if keys:
            yield node, keys


def _iterates_variables(ctx: LintContext, name: cst.Name) -> bool:
    """``name`` is the target of a loop or comprehension over ``variables`` around it."""
    node: cst.CSTNode | None = name
    while node is not None:
        parent = ctx.index.parent(node)
        if type(parent) in (cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp):
            fors = ctx.index.walk.walk(parent.for_in)  # type: ignore[attr-defined]
            if any(type(f) is cst.CompFor and type(f.target) is cst.Name and f.target.value == name.value
                   and type(f.iter) is cst.Name and f.iter.value == "variables" for f in fors):
                return True
        if type(parent) is cst.For and type(parent.target) is cst.Name and parent.target.value == name.value:
            return type(parent.iter) is cst.Name and parent.iter.value == "variables"
        if type(parent) in (cst.FunctionDef, cst.Lambda):
            return False
        node = parent
    return False


def _short_keys(ctx: LintContext, table: cst.BaseExpression) -> str | None:
    """The keys of a dict literal (or a name bound once to one), when all are strings without ':'."""
    if type(table) is cst.Name:
        owner = ctx.index.enclosing(table, (cst.FunctionDef, cst.Lambda))
        values = ctx.index.env_for(owner).lookup(table.value) or []
        table = values[0] if len(values) == 1 and isinstance(values[0], cst.BaseExpression) else table
    if type(table) is not cst.Dict or not table.elements:
        return None
    keys = []
    for element in table.elements:
        if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
            return None
        text = element.key.evaluated_value
        if not isinstance(text, str) or ":" in text:
            return None
        keys.append(repr(text))
    return ", ".join(keys[:3]) + (", ..." if len(keys) > 3 else "")


# collections of a layer's or module's variables in its own order, not TF's
_OWN_ORDER = frozenset({"trainable_variables", "trainable_weights", "weights", "variables"})


def _iterates_other_order(ctx: LintContext, expr: cst.BaseExpression | None) -> str | None:
    """``[... for v in self.trainable_variables]``: the list follows the object's order."""
    if type(expr) is not cst.ListComp:
        return None
    for comp in ctx.index.walk.walk(expr.for_in):
        if type(comp) is cst.CompFor and type(comp.iter) is cst.Attribute and comp.iter.attr.value in _OWN_ORDER:
            return describe(comp.iter)
    return None
