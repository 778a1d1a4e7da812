"""CG003 gradient-count-mismatch: grad returns a different number of gradients than there are inputs."""

from __future__ import annotations

from collections.abc import Iterator

from cg_lint.analyses.counting import (
    ABSENT,
    PRESENT,
    expected_inputs,
    grad_counter,
    returned_counts,
    variables_branch,
)
from cg_lint.analyses.tensors import statement_of
from cg_lint.analyses.variable_reads import reads_no_variable
from cg_lint.codes import CG003
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient
from cg_lint.rules.base import LintContext, Rule, plural
from cg_lint.rules.leads_left import count_lead


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
    range unless calls in the same file pin it (calls of the name, of a factory that returns the
    custom gradient, `f(*state)` with `state` a tuple the file spells; a call with keyword
    arguments is CG008's); when calls pass different numbers of inputs, the call that disagrees
    with what grad returns is reported.

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
    returned by a helper whose returns do not agree on a count. A plain function of the same file,
    or of another module of the project that the file imports (`from .grads import mul_grads`), is
    counted through its returns. A branch on `variables` is read as dead when the file says which way
    it goes (the forward reads a variable, or certainly reads none).
    """

    code = CG003
    VALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def affine(params):
    def grad(dy):
        # a dict input is one input per value; a dict of gradients flattens in the same key order
        return {"w": dy * 2.0, "b": dy}
    return params["w"] * 2.0 + params["b"], grad

# tf: grad(lambda w, b: affine({"w": w, "b": b}), [1.0, 2.0], [3.0, 4.0]) => both ok
""",
        """
import tensorflow as tf

def _products(dy, x, y):
    return dy * y, dy * x

@tf.custom_gradient
def product(x, y):
    def grad(dy):
        return _products(dy, x, y)
    return x * y, grad

# tf: grad(product, [1.0, 2.0], [3.0, 4.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def reshape_to(x, shape: tuple[int, ...]):
    y = tf.reshape(x, shape)
    def grad(dy):
        # shape is a tuple: TF counts one input per dimension (two here), each needs a gradient slot
        return (tf.reshape(dy, tf.shape(x)),) + (None,) * len(shape)
    return y, grad

def as_matrix(x):
    return reshape_to(x, (2, 2))

# tf: grad(as_matrix, [1.0, 2.0, 3.0, 4.0]) => both ok
""",
        """
import tensorflow as tf


@tf.custom_gradient
def blur(x, w, shape, shifts):
    y = tf.reshape(x * w, shape)
    def grad(dy):
        dx = tf.reshape(dy * w, tf.shape(x))
        # shape is a pair and shifts a dict of two: TF flattens them, 1 + 1 + 2 + 2 inputs
        return dx, tf.reduce_sum(dy * tf.reshape(x, shape)), None, None, None, None
    return y, grad


class Blur:
    def __init__(self):
        self.shape = (2, 2)
        self.shifts = {"a": 1.0, "b": 2.0}

    def __call__(self, x, w):
        return blur(x, w, self.shape, self.shifts)

# tf: grad(lambda x, w: Blur()(x, w), [1.0, 2.0, 3.0, 4.0], 2.0) => both ok
""",
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
        """
import tensorflow as tf

@tf.custom_gradient
def pair_sum(*xs):
    return tf.add_n(list(xs)), lambda dy: (dy, dy)

def apply(x, y):
    parts = [x]
    parts.append(y)  # a list that grows: two inputs by the time of the call
    return pair_sum(*parts)

# tf: grad(apply, [1.0], [2.0]) => both ok
""",
        """
import tensorflow as tf

@tf.custom_gradient
def first_of_two(x):
    def grad(*dys):
        return dys[0] + dys[-1]  # one tensor built from both upstreams
    return (x * 1.0, x * 1.0), grad

# tf: grad(first_of_two, [1.0, 2.0]) => both ok [[2.0, 2.0]]
""",
    )
    INVALID = (
        """
import tensorflow as tf

def _products(dy, x, y):
    return dy * y, dy * x  # the helper's count is grad's count

@tf.custom_gradient
def triple(x, y, z):
    def grad(dy):
        return _products(dy, x, y)  # expect: CG003
    return x * y + z, grad

# tf: grad(triple, [1.0, 2.0], [3.0, 4.0], [5.0, 6.0]) => eager raises returned 2 instead; graph raises too few
""",
        """
import tensorflow as tf

@tf.custom_gradient
def total(x, y):
    def grad(dy):
        return (dy for _ in range(2))  # expect: CG003
    return x + y, grad

# tf: grad(total, [1.0, 2.0], [3.0, 4.0]) => eager raises returned 1 instead; graph raises too few gradients
""",
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
        """
import tensorflow as tf

def make_sum():
    @tf.custom_gradient
    def total(*xs):
        return tf.add_n(list(xs)), lambda dy: (dy, dy)  # expect: CG003
    return total

def apply(a, b, c):
    op = make_sum()
    return op(a, b, c)  # the factory's custom gradient, called with three inputs

# tf: grad(apply, 1.0, 2.0, 3.0) => eager raises return 3 gradients; graph raises too few gradients
""",
        """
import tensorflow as tf

@tf.custom_gradient
def cell(*inputs):
    return tf.add_n(list(inputs)), lambda dy: (dy, dy)  # expect: CG003

def apply(a, b, c):
    state = (a, b, c)
    return cell(*state)  # three inputs

# tf: grad(apply, 1.0, 2.0, 3.0) => eager raises return 3 gradients; graph raises too few gradients
""",
        """
import tensorflow as tf

@tf.custom_gradient
def add(a, b):
    return a + b, lambda *dys: dys[0]  # expect: CG003

def apply(a, b):
    return add(a, b)

# tf: grad(apply, [1.0], [2.0]) => eager raises return 2 gradients; graph raises too few gradients
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
                    if counts is None and branch is None and not grad.accepts_variables and not grad.is_custom_gradient:
                        # `return helper(...)` of another module: its body counts (a lead)
                        lead = count_lead(self, ctx, record, site, expected.low, expected.high, expected.exact,
                                          _describe_expected(record, expected))
                        if lead is not None:
                            yield lead
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
