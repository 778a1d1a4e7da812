"""Arity rules: the forward's return pair, grad's upstream parameters, grad's gradient count."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.counting import (
    ABSENT,
    PRESENT,
    Kind,
    classify,
    expected_inputs,
    grad_counter,
    returned_counts,
    variables_branch,
)
from cg_lint.analyses.leaves import Counter
from cg_lint.analyses.tensors import statement_of
from cg_lint.analyses.variable_reads import reads_no_variable
from cg_lint.codes import CG001, CG002, CG003
from cg_lint.findings import Edit, Finding, Fix
from cg_lint.model.records import CustomGradient, ForwardReturn
from cg_lint.rules.base import LintContext, Rule, describe, plural
from cg_lint.syntax.environments import literal_binding


class ForwardReturnNotPair(Rule):
    """Forward does not return `(outputs, grad_fn)`.

    ## What it does
    Checks that every `return` of a custom-gradient function gives exactly two things: the outputs
    (any structure) and the gradient function.

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
    A return value built by a helper call (`return make_pair(x)`) is not checked.
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


class GradientCountMismatch(Rule):
    """Grad returns a different number of gradients than the function has inputs.

    ## What it does
    Checks that every `return` of a gradient function gives one gradient per flattened positional input
    of the custom-gradient function. Non-tensor inputs count (return `None` for them); `self` of a
    method does not; a list or tuple input that the body unpacks (`a, b = xs`) counts once per
    element, as TF flattens it. When grad takes `variables`, the count applies to the first element
    of its `(input_grads, variable_grads)` pair, except in a branch that runs only when TF passes no
    variables (`if variables is None:`), where TF called `grad(*upstreams)` and every returned value
    is an input gradient. Parameters with defaults count only when passed, so the expected count is a
    range unless calls in the same file pin it; when calls pass different numbers of inputs, the
    call that disagrees with what grad returns is reported.

    ## Why is this bad?
    Eagerly, TensorFlow raises `ValueError: custom_gradient function expected to return 2 gradients,
    but returned 1 instead.` only when a gradient is taken. Under `tf.function` the C++ tape raises
    `InternalError: Recorded operation 'f' returned too few gradients. Expected 3 but received 2`, and
    it says "too few" even when there are too many.

    ## Example
    ```python
    @tf.custom_gradient
    def weighted(x, w):
        def grad(dy):
            return dy * w
        return x * w, grad
    ```

    ## Use instead
    ```python
    @tf.custom_gradient
    def weighted(x, w):
        def grad(dy):
            return dy * w, dy * x
        return x * w, grad
    ```

    ## Fix safety
    No automatic fix: the missing gradient has to be written (or `None` returned on purpose).

    ## Known limitations
    Silent when the count is not statically knowable: `*args` inputs, inputs iterated or measured
    (`for t in xs`, `len(xs)`), gradients built at run time (`[g] + [None] * (len(args) - 1)`) or
    returned by a helper call. A branch on `variables` is read as dead when the file says which way
    it goes (the forward reads a variable, or certainly reads none).
    """

    code = CG003
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def scale(x, factor):
    def grad(dy):
        return dy * factor, None  # factor is an input too
    return x * factor, grad
""",
        """
import tensorflow as tf

class Dense:
    @tf.custom_gradient
    def clip(self, x):
        return x, lambda dy: tf.clip_by_value(dy, -1.0, 1.0)
""",
        """
import tensorflow as tf

@tf.custom_gradient
def first_only(*args):
    def grad(dy):
        return [dy] + [None] * (len(args) - 1)
    return args[0], grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, name=None):
    def grad(dy):
        return dy
    return tf.identity(x, name=name), grad
""",
        """
import tensorflow as tf

w = tf.Variable(1.0)

@tf.custom_gradient
def f(x):
    y = x * w
    def grad(dy, variables=None):
        return dy * w, [dy * x]
    return y, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair_in(xs, y):
    a, b = xs  # xs is a list: it flattens into two inputs
    def grad(dy):
        return dy, dy, dy
    return a + b + y, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def outer(x):
    @tf.custom_gradient
    def grad(dy):
        def grad_grad(ddy):
            return ddy
        return dy * 2.0, grad_grad
    return x * x, grad
""",
        """
import functools
import tensorflow as tf

@tf.custom_gradient
def scale(x, factor):
    def grad(dy):
        return dy * factor, None
    return x * factor, grad

same = functools.partial(scale)  # not a call with zero inputs
""",
        """
import tensorflow as tf

@tf.custom_gradient
def passthrough(x):
    def grad(dy, variables=None):
        if variables is None:
            return dy  # TF passes no variables: input gradients only
        return dy, [tf.zeros_like(v) for v in variables]
    return tf.identity(x), grad

# tf: grad(passthrough, [1.0, 2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair_sum(xs, y):
    a, b = xs
    def grad(dz):
        return dz, dz, dz  # one per element of xs, then y
    return a + b + y, grad

# tf: grad(lambda a, b, y: pair_sum([a, b], y), 1.0, 2.0, 3.0) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def diff(x, y):
    return x - y, lambda dz: (dz, -dz)

a = diff(tf.constant(1.0), tf.constant(2.0))
b = diff(tf.constant(1.0), y=tf.constant(2.0))  # a keyword: CG008 reports this call, not CG003

# tf: grad(diff, [1.0], [2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def weighted(x, w):
    def grad(dy):
        return dy * w  # expect: CG003
    return x * w, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x):
    def grad(dy):
        return dy, dy  # expect: CG003
    return x, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, scale=2.0):
    def grad(dy):
        return dy * scale  # expect: CG003
    return x * scale, grad

y = f(1.0, 3.0)
""",
        """
import tensorflow as tf

w = tf.Variable(1.0)

@tf.custom_gradient
def f(x, y):
    def grad(dz, variables=None):
        return dz, [dz]  # expect: CG003
    return x * y * w, grad
""",
        """
import tensorflow as tf

@tf.custom_gradient
def passthrough(x):
    def grad(dy, variables=None):
        if variables is None:
            return dy, None  # expect: CG003
        return dy, [tf.zeros_like(v) for v in variables]
    return tf.identity(x), grad

# tf: grad(passthrough, [1.0, 2.0]) => eager raises return 1 gradients, but returned 2; graph raises too few gradients
""",
        """
import tensorflow as tf

@tf.custom_gradient
def pair_sum(xs, y):
    a, b = xs  # a list input: TF flattens it into two inputs
    def grad(dz):
        return dz, dz  # expect: CG003
    return a + b + y, grad

# tf: grad(lambda a, b, y: pair_sum([a, b], y), 1.0, 2.0, 3.0) => eager raises 3 gradients; graph raises too few
""",
        """
import tensorflow as tf

@tf.custom_gradient
def scaled(x, scale=2.0):
    return x * scale, lambda dy: dy * scale

def twice(x):
    return scaled(x)

def thrice(x):
    return scaled(x, 3.0)  # expect: CG003

# tf: grad(thrice, [1.0, 2.0]) => eager raises return 2 gradients, but returned 1; graph raises too few gradients
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            expected = expected_inputs(record, ctx.index)
            if expected is None or not record.grads:
                continue
            returned: set[int] | None = set()  # every count grad's returns can give, if all are known
            for grad in record.grads:
                counter = grad_counter(record, grad, ctx.index)
                for site in grad.returns:
                    branch = variables_branch(ctx.index, grad, site.anchor)
                    if branch == ABSENT and record.variable_reads or branch == PRESENT and reads_no_variable(
                            ctx.index, record):
                        continue  # a branch that never runs: the forward's variables decide
                    counts = returned_counts(grad, site, counter, branch)
                    if counts is None:
                        returned = None
                    elif returned is not None:
                        returned |= counts
                    if not counts or any(expected.accepts(n) for n in counts):
                        continue
                    got = min(counts)
                    where = (" in its branch for calls without variables (input gradients only),"
                             if branch == ABSENT else "")
                    yield self.finding(
                        ctx, site.line, site.column,
                        f"grad of '{record.name}' returns {plural(got, 'gradient')}{where} but "
                        f"{_describe_expected(record, expected)}",
                        record.qualname,
                    )
            if returned and len(expected.exact) > 1 and any(n in expected.exact for n in returned):
                # calls pass different numbers of inputs: each must match what grad returns
                shown = " or ".join(str(n) for n in sorted(returned))
                for call, n in expected.calls:
                    if n in returned or call.keywords or not call.positional:
                        continue  # keywords change what TF records: CG008's business
                    line, column = ctx.position(statement_of(ctx.index, call.node))
                    yield self.finding(ctx, line, column, (
                        f"'{record.name}' is called here with {plural(n, 'input')} but its grad returns {shown} "
                        f"{'gradient' if returned == {1} else 'gradients'}: when the gradient is taken TF raises "
                        f"ValueError eagerly ('expected to return {n} gradients') and InternalError under "
                        f"tf.function; return one gradient per input of every call (None for the unused ones)"),
                        record.qualname)


def _describe_expected(record: CustomGradient, expected) -> str:
    name = record.name
    if expected.exact:
        counts = " or ".join(str(n) for n in sorted(expected.exact))
        noun = "input" if expected.exact == {1} else "inputs"
        return f"'{name}' is called with {counts} {noun} (line {expected.call_line})"
    sizes = record.structured_sizes
    params = ", ".join((p.name if not p.has_default else f"{p.name}=")
                       + (f": {sizes[p.name]} elements" if p.name in sizes else "")
                       for p in record.signature.positional)
    if expected.high is None:
        return f"'{name}' takes at least {plural(expected.low, 'input')} ({params})"
    if expected.low == expected.high:
        return f"'{name}' takes {plural(expected.low, 'input')} ({params})"
    return f"'{name}' takes {expected.low} to {expected.high} inputs ({params})"
