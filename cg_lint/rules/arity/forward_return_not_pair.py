"""CG001 forward-return-not-pair: the forward does not return (outputs, grad_fn)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.counting import Kind, classify
from cg_lint.codes import CG001
from cg_lint.findings import Edit, Finding, Fix
from cg_lint.model.records import ForwardReturn
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.syntax.environments import literal_binding


class ForwardReturnNotPair(Rule):
    """Forward does not return `(outputs, grad_fn)`.

    ## What it does
    Checks that every `return` of a custom-gradient function gives exactly two things: the outputs
    (any structure) and the gradient function, also through a plain helper of the file whose
    every return is one value that is no function (`return _finish(y)`).

    ## Why is this bad?
    TensorFlow runs `result, grad_fn = f(*args)`. `return z, w, grad` fails with
    `ValueError: too many values to unpack (expected 2)`, `return y` fails the same way (or, when
    `y` has two rows, with `TypeError: unsupported callable`), and `return grad, y` or `return y, None`
    fails with `TypeError: unsupported callable`. None of these messages mentions `custom_gradient`.

    ## Example
    ```python
    @tf.custom_gradient
    def split_scale(x):
        def grad(dlow, dhigh):
            return dlow + 2.0 * dhigh
        return x, 2.0 * x, grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def split_scale(x):
        def grad(dlow, dhigh):
            return dlow + 2.0 * dhigh
        return (x, 2.0 * x), grad
    ```

    ## Fix safety
    The fix for `return a, b, grad` (wrapping the outputs in a tuple) is safe: the function could not
    run before. Swapped or missing gradient functions are not fixed automatically.

    ## Known limitations
    A return value built by a helper call is checked only when every return of the helper is one
    value that is no function (`return _finish(y)`); a helper that builds the pair
    (`return make_pair(x)`) is not checked.
    """

    code = CG001
    fixable = True
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy):
        return dy
    return tf.identity(x), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def two(x, y):
    z, w = x * y, x + y
    def grad(dz, dw):
        return dz * y + dw, dz * x + dw
    return (z, w), grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def via_helper(x):
    return make_pair(x)  # a helper may build the pair
""",
        """
import tensorflow as tf

@tf.custom_gradient
def early(x):
    if x.shape.rank == 0:
        return x, lambda dy: dy
    pair = (x * 2.0, lambda dy: dy * 2.0)
    return pair
""",
        """
import tensorflow_probability as tf  # not TensorFlow: TFP's helper has another contract

@tf.custom_gradient
def g(x):
    return x
""",
        """
import tensorflow as tf

def _with_grad(y, g):
    return y, g  # a pair: what the forward needs

def _same(g):
    return g  # hands back what it is given: a function here

@tf.custom_gradient
def double(x):
    def grad(dy):
        return dy * 2.0
    return _with_grad(x * 2.0, _same(grad))

# tf: grad(double, [1.0, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dz, dw):
        return dz + dw
    return x, x * 2.0, grad  # expect: CG001
""",
        """
from tensorflow import custom_gradient as cg

@cg
def f(x):
    y = x * x
    return y  # expect: CG001
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy):
        return dy
    return grad, x  # expect: CG001
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    return tf.square(x), None  # expect: CG001
""",
        """
import tensorflow as tf

g = tf.custom_gradient(lambda x: (x, x * 2.0))  # expect: CG001
""",
        """
import tensorflow as tf

def _finish(y):
    return tf.identity(y)  # the outputs alone: the grad was left behind

@tf.custom_gradient
def double(x):
    def grad(dy):
        return dy * 2.0
    return _finish(x * 2.0)  # expect: CG001

# tf: grad(double, [1.0, 2.0, 3.0]) => eager raises too many values to unpack; graph raises Iterating over a symbolic
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            env = ctx.index.env_for(record.node)
            own = set(record.signature.all_names())
            for fr in record.returns:
                message, fix = self._problem(ctx, record, fr, env, own)
                if message:
                    yield self.finding(ctx, fr.site.line, fr.site.column, message, record.qualname, fix)

    def _problem(self, ctx, record, fr: ForwardReturn, env, own):
        name = record.name
        value = fr.site.value
        if value is None:
            return f"'{name}' returns None; a custom-gradient function must return (outputs, grad_fn)", None
        qn = ctx.index.qualnames
        if fr.elements is None:
            resolved = literal_binding(value, env)
            if resolved is not None:
                value = resolved
            elif classify(value, env, own, qn) == Kind.NOT_CALLABLE:
                return (f"'{name}' returns only its outputs ({describe(value)}); it must return "
                        f"(outputs, grad_fn)"), None
            elif (single := _helper_single_value(ctx, value, env, own)) is not None:
                return (f"'{name}' returns what {describe(value.func)}() returns, only its outputs "
                        f"({describe(single)}); it must return (outputs, grad_fn)"), None
            else:
                return None, None
            if type(value) not in (cst.Tuple, cst.List):
                return None, None
            elements = [e.value for e in value.elements if type(e) is not cst.StarredElement]
            if len(elements) != len(value.elements):
                return None, None
        else:
            elements = fr.elements
        kinds = [classify(e, env, own, qn) for e in elements]
        if len(elements) == 2:
            if kinds[1] == Kind.NOT_CALLABLE:
                if kinds[0] == Kind.FUNCTION:
                    return (f"'{name}' returns ({describe(elements[0])}, {describe(elements[1])}): the pair is "
                            f"swapped; return (outputs, grad_fn)"), None
                return (f"'{name}' returns ({describe(elements[0])}, {describe(elements[1])}): the second "
                        f"element must be the gradient function"), None
            return None, None
        shown = ", ".join(describe(e) for e in elements)
        if len(elements) > 2 and kinds[-1] == Kind.FUNCTION and fr.elements is not None:
            outputs = ", ".join(describe(e) for e in elements[:-1])
            fix = self._wrap_fix(ctx, fr)
            return (f"'{name}' returns {len(elements)} values ({shown}); TF unpacks exactly two: "
                    f"return ({outputs}), {describe(elements[-1])}"), fix
        return (f"'{name}' returns {plural(len(elements), 'value')} ({shown}); it must return "
                f"(outputs, grad_fn)"), None

    def _wrap_fix(self, ctx: LintContext, fr: ForwardReturn) -> Fix | None:
        """Two insertions, ``(`` before the first output and ``)`` after the last: everything between
        (comments, continuation lines, any whitespace) stays as written."""
        value = fr.site.value
        if type(value) is not cst.Tuple or value.lpar:
            return None
        outs = value.elements[:-1]
        # an Element's range is its value's, parentheses included (a value's own range excludes them)
        (l1, c1), (l2, c2) = ctx.index.position(outs[0]), ctx.index.end_position(outs[-1])
        return Fix("Wrap the outputs in a tuple", (Edit(l1, c1, l1, c1, "("), Edit(l2, c2, l2, c2, ")")), safe=True)


def _helper_single_value(ctx: LintContext, call: cst.BaseExpression, env, own: set[str]) -> cst.BaseExpression | None:
    """``return _finish(y)`` where ``_finish`` is a plain function of this file whose every return
    is one value that is no function (a parameter counts by what the call passes for it): that
    value; None when anything is unclear (a tuple, a callable, a value passed in unknown)."""
    if type(call) is not cst.Call or type(call.func) is not cst.Name or any(a.star or a.keyword for a in call.args):
        return None
    defs = ctx.index.lookup_function(call.func)
    if len(defs) != 1 or type(defs[0]) is not cst.FunctionDef or defs[0].decorators:
        return None
    helper = defs[0]
    if any(r.node is helper for r in ctx.records):
        return None
    henv = ctx.index.env_for(helper)
    params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
    qn = ctx.index.qualnames
    found = None
    for node in ctx.index.walk.own_nodes(helper.body):
        if type(node) is cst.Yield:
            return None
        if type(node) is not cst.Return:
            continue
        value = node.value
        if value is None:
            return None
        value = literal_binding(value, henv) or value
        if type(value) in (cst.Tuple, cst.List):
            return None
        if type(value) is cst.Name and value.value in params and not henv.bindings.get(value.value):
            i = params.index(value.value)
            if i >= len(call.args):
                return None
            kind = classify(call.args[i].value, env, own, qn)
        else:
            kind = classify(value, henv, set(), qn)
        if kind != Kind.NOT_CALLABLE:
            return None
        found = found or node.value
    return found
