"""CG008 keyword-arguments: keyword arguments at a call of a custom-gradient function."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.contexts import context_of
from cg_lint.analyses.untraceable import leaves_tensorflow
from cg_lint.project import EAGER_HALF
from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import statement_of
from cg_lint.codes import CG008
from cg_lint.findings import Finding
from cg_lint.rules.base import LintContext, Rule


class KeywordArguments(Rule):
    """Keyword arguments passed to a custom-gradient function (including `functools.partial`).

    ## What it does
    Flags calls of a custom-gradient function defined in the same file (or returned by a factory
    function there: `op = make_op(); op(x=...)`) that pass keyword arguments,
    directly or through a `**mapping` whose keys the file spells (`f(x, **{"scale": 3.0})`,
    `f(x, **OPTIONS)` with `OPTIONS = {...}` or `dict(scale=3.0)`), `functools.partial(f,
    name=value)` bindings of one, calls that forward `**kwargs` to a custom-gradient function
    written to accept keywords (`def inner(*args, **kwargs)`), and decorators of the file above
    `@tf.custom_gradient` whose wrapper calls it with keywords (explicit ones, or `**kwargs` after
    `kwargs.setdefault("training", ...)`).

    ## Why is this bad?
    Under `tf.function` (and Keras `fit`) any keyword argument raises `ValueError: The custom_gradient
    decorator currently supports keywords arguments only when eager execution is enabled.` Eagerly it
    is worse: keyword arguments are not recorded as inputs, so a tensor passed by keyword silently
    gets a `None` gradient, and when every tensor is passed by keyword the custom gradient is bypassed
    altogether (tensorflow#65839).

    ## Example
    ```python
    @tf.custom_gradient
    def scaled(x, scale):
        return x * scale, lambda dy: (dy * scale, None)

    y = scaled(tf.constant(2.0), scale=3.0)
    ```

    ## Use instead
    ```python
    def make_scaled(scale):
        @tf.custom_gradient
        def scaled(x):
            return x * scale, lambda dy: dy * scale
        return scaled

    y = make_scaled(3.0)(tf.constant(2.0))
    ```
    Pass tensors positionally; bind configuration with a closure (a factory function).

    ## Fix safety
    No automatic fix: turning keywords into positional arguments changes the gradient count (CG003).

    ## Known limitations
    Only calls in the file that defines the function are checked: a custom-gradient function
    imported from another module (`from .ops import my_op`) is not recognised at its call sites.
    `f(**options)` of an unknown mapping is flagged only when `f` itself declares `**kwargs` or
    keyword-only parameters.

    ## Eager-only code
    Where graph mode cannot happen (see CG009), a keyword that is a Python constant is only
    configuration and is not reported; a keyword that may be a tensor still is, since eagerly it
    silently gets no gradient.
    """

    code = CG008
    VALID = (
        """
import tensorflow as tf


def numeric(f, h=1e-3):
    @tf.custom_gradient
    def slope(x, **kw):
        return (f(x + h, **kw) - f(x - h, **kw)) / (2 * h), lambda dy: dy * 0.0

    @tf.custom_gradient
    def value(x, **kw):
        def grad(dy):
            return dy * slope(x, **kw)  # value's own keywords: {} whenever it is traced
        return f(x, **kw), grad
    return value


cube = numeric(lambda x: x ** 3)

# tf: grad(cube, [1.0, 2.0]) => both ok
""",
        """
import numpy as np
import tensorflow as tf


@tf.custom_gradient
def phase(theta, n, dtype=np.complex64):
    t = theta.numpy()  # computed in NumPy: made to run eagerly (CG010 says so once, if traced)
    mat = np.exp(1j * t * np.arange(n)).astype(dtype)
    def grad(dy):
        d = (1j * np.arange(n) * mat).astype(mat.dtype)
        return tf.math.real(tf.reduce_sum(dy * tf.math.conj(d))), None
    return tf.constant(mat), grad


def phase_vector(theta, n):
    return phase(theta, n, dtype=np.complex128)  # a dtype is configuration, never an input
""",
        """
import tensorflow as tf

@tf.custom_gradient
def scaled(x, scale):
    return x * scale, lambda dy: (dy * scale, None)

y = scaled(tf.constant(2.0), 3.0)
z = tf.identity(y, name="z")  # keywords to other functions are fine
""",
        """
import functools
import tensorflow as tf

def make(scale):
    @tf.custom_gradient
    def scaled(x):
        return x * scale, lambda dy: dy * scale
    return scaled

f = functools.partial(make, scale=2.0)  # a factory, not the custom gradient
""",
        """
import tensorflow as tf

@tf.custom_gradient
def f(x, *rest):
    return x, lambda dy, *drest: (dy, *drest)

def call(*args, **kwargs):
    return f(*args, **kwargs)  # f takes no keywords: a keyword would fail in Python already
""",
        """
import tensorflow as tf

tf.config.run_functions_eagerly(True)  # this module only runs eagerly: a Python keyword is configuration

@tf.custom_gradient
def scaled(x, scale=2.0):
    return x * scale, lambda dy: dy * scale

def apply(x):
    return scaled(x, scale=3.0)

# tf: grad(apply, [1.0, 2.0]) => both ok [[3.0, 3.0]]
""",
        """
import tensorflow as tf

def make(weight):
    @tf.custom_gradient
    def scaled(x):
        return x * weight, lambda dy: dy * weight

    def call(x, scale=1.0):
        return scaled(x) * scale
    return call  # the factory hands out `call`, not the custom gradient

def apply(x):
    op = make(weight=2.0)  # a keyword to the factory: configuration
    return op(x, scale=3.0)

# tf: grad(apply, [1.0, 2.0]) => both ok [[6.0, 6.0]]
""",
        """
import functools
import tensorflow as tf

def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tf.get_logger().debug("calling %s", fn.__name__)
        return fn(*args, **kwargs)  # hands on only what callers pass: no keywords here
    return wrapper

@logged
@tf.custom_gradient
def double(x):
    return x * 2.0, lambda dy: dy * 2.0

def apply(x):
    return double(x)

# tf: grad(apply, [1.0, 2.0]) => both ok
""",
    )
    INVALID = (
        """
import tensorflow as tf

@tf.custom_gradient
def scaled(x, scale):
    return x * scale, lambda dy: (dy * scale, None)

y = scaled(tf.constant(2.0), scale=3.0)  # expect: CG008
""",
        """
import functools
import tensorflow as tf

@tf.custom_gradient
def scaled(x, scale=2.0):
    return x * scale, lambda dy: dy * scale

triple = functools.partial(scaled, scale=3.0)  # expect: CG008
""",
        """
import tensorflow as tf

class Op:
    @tf.custom_gradient
    def apply(self, x, y):
        return x * y, lambda dz: (dz * y, dz * x)

    def __call__(self, a, b):
        return self.apply(  # expect: CG008
            x=a,
            y=b)
""",
        """
import tensorflow as tf

def recompute(f):
    @tf.custom_gradient
    def inner(*args, **kwargs):
        y = f(*args, **kwargs)
        def grad(*dys):
            return dys
        return y, grad

    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs)  # expect: CG008
    return wrapper
""",
        """
import tensorflow as tf

@tf.custom_gradient
def scaled(x, scale):
    return x * scale, lambda dy: (dy * scale, None)

OPTIONS = {"scale": 3.0}

def apply(x):
    return scaled(x, **OPTIONS)  # expect: CG008

# tf: grad(apply, [1.0, 2.0]) => eager raises return 1 gradients; graph raises only when eager
""",
        """
import tensorflow as tf

def make_loss(weight):
    @tf.custom_gradient
    def loss(x, y):
        def grad(dz):
            return dz * weight * 2.0 * (x - y), -dz * 2.0 * (x - y)
        return tf.reduce_sum(tf.square(x - y)), grad
    return loss

def apply(a, b):
    op = make_loss(1000.0)
    return op(x=a, y=b)  # expect: CG008

# tf: grad(apply, [4.0, 5.0], [5.0, 7.0]) => eager wrong [[-2000.0, -4000.0], [2.0, 4.0]]; graph raises only when eager
""",
        """
import functools
import tensorflow as tf

def with_training(fn):
    @functools.wraps(fn)
    def wrapper(x, **kwargs):
        kwargs.setdefault("training", True)
        return fn(x, **kwargs)
    return wrapper

@with_training  # expect: CG008
@tf.custom_gradient
def noisy(x, training=False):
    y = x + tf.random.normal(tf.shape(x), seed=1) * 0.0 if training else x
    return y, lambda dy: dy

def apply(x):
    return noisy(x)

# tf: grad(apply, [1.0, 2.0]) => eager ok; graph raises only when eager
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            sig = record.signature
            takes_keywords = sig.kwargs is not None or bool(sig.kwonly)
            context = context_of(ctx.index, record)  # computed only when a call has keywords
            injected = _decorator_keywords(ctx, record) if not context.eager_only else None
            if injected is not None:
                decorator, names = injected
                line, column = ctx.position(decorator)
                yield self.finding(ctx, line, column, (
                    f"'{record.name}' is wrapped by a decorator whose wrapper calls it with keyword arguments "
                    f"({names}): under tf.function this raises ValueError (custom_gradient supports keyword "
                    f"arguments only eagerly){context.traced_note()}, and eagerly keyword tensors get no custom "
                    f"gradient; pass them positionally, or apply the decorator below @tf.custom_gradient"),
                    record.qualname)
            for site in record.call_sites:
                forwarded = next((a for a in site.node.args if a.star == "**"), None)
                spread = _mapping_items(ctx, forwarded.value) if forwarded is not None else None
                if not site.keywords and forwarded is not None and spread is None and takes_keywords:
                    if _outer_keywords(ctx, forwarded.value):
                        continue  # an enclosing custom gradient's own **kwargs: empty whenever it is traced
                    # the forward is written to receive keywords and this call hands them on
                    line, column = ctx.position(statement_of(ctx.index, site.node))
                    yield self.finding(ctx, line, column, (
                        f"'{record.name}' takes keyword arguments and this call forwards "
                        f"**{cst.Module(body=[]).code_for_node(forwarded.value)} to it: under tf.function any "
                        f"keyword a caller passes raises ValueError (custom_gradient supports keyword arguments only "
                        f"eagerly), and eagerly keyword tensors get no custom gradient; bind them in a closure "
                        f"(functools.partial of the inner function) before applying custom_gradient"),
                        record.qualname)
                    continue
                items = [(a.keyword.value, a.value) for a in site.keywords if type(a.keyword) is cst.Name]
                if spread:
                    items += spread
                if not items:
                    continue
                configuration = all(_python_constant(ctx, value) or key in CONFIGURATION for key, value in items)
                if configuration and (context.eager_only or leaves_tensorflow(ctx.index, record)):
                    # eagerly a Python keyword is only configuration: nothing is lost (and a definition
                    # that leaves TensorFlow has CG010's one finding for tf.function)
                    continue
                names = ", ".join(f"{k}=" for k, _ in items)
                if spread and forwarded is not None:
                    names += f" through **{cst.Module(body=[]).code_for_node(forwarded.value)}"
                how = (f"functools.partial binds keyword arguments ({names}) to '{record.name}'" if site.via_partial
                       else f"'{record.name}' is called with keyword arguments ({names})")
                tail = (" and every input is a keyword, so the custom gradient is bypassed"
                        if not site.positional and not site.via_partial else "")
                line, column = ctx.position(statement_of(ctx.index, site.node))
                if configuration:  # eagerly nothing is lost: only tracing breaks it
                    yield self.finding(ctx, line, column, (
                        f"{how}: under tf.function this raises ValueError (custom_gradient supports keyword "
                        f"arguments only eagerly){context.traced_note(site.node)}; bind configuration in a closure "
                        f"(a factory, or functools.partial of the undecorated function)"), record.qualname)
                    continue
                yield self.finding(ctx, line, column, (
                    f"{how}: under tf.function this raises ValueError (custom_gradient supports keyword arguments "
                    f"only eagerly){context.traced_note(site.node)}; {EAGER_HALF} are not "
                    f"inputs of the custom gradient and silently get a None or plain-autodiff gradient{tail}; pass "
                    f"inputs positionally and bind configuration in a closure"), record.qualname)


# keywords that name configuration, never a tensor to differentiate
CONFIGURATION = frozenset({"dtype", "name", "training", "axis", "seed", "verbose", "mode", "shape"})
def _decorator_keywords(ctx: LintContext, record) -> tuple[cst.Decorator, str] | None:
    """A decorator of this file above the custom-gradient one whose wrapper calls the decorated
    function with keywords: explicit ones, or its ``**kwargs`` after adding a key to them
    (``kwargs.setdefault("training", ...)``, ``kwargs["mask"] = ...``, ``kwargs.update(...)``)."""
    func = record.node
    if type(func) is not cst.FunctionDef:
        return None
    for decorator in func.decorators:
        if ctx.index.is_custom_gradient(decorator.decorator if type(decorator.decorator) is not cst.Call
                                        else decorator.decorator.func):
            return None  # decorators below custom_gradient wrap the forward, not the call
        expr = decorator.decorator
        if type(expr) is not cst.Name:
            continue
        defs = ctx.index.lookup_function(expr)
        if len(defs) != 1 or type(defs[0]) is not cst.FunctionDef or not defs[0].params.params:
            continue
        wrapped = defs[0].params.params[0].name.value
        for node in ctx.index.walk.walk(defs[0]):
            if type(node) is not cst.Call or type(node.func) is not cst.Name or node.func.value != wrapped:
                continue
            wrapper = ctx.index.enclosing(node, (cst.FunctionDef,))
            names = [f"{a.keyword.value}=" for a in node.args if a.keyword is not None]
            spread = next((a.value for a in node.args if a.star == "**"), None)
            if type(spread) is cst.Name and type(wrapper) is cst.FunctionDef and _adds_keys(ctx, wrapper, spread.value):
                names.append(f"**{spread.value} with keys it adds")
            if names:
                return decorator, ", ".join(names)
    return None


def _adds_keys(ctx: LintContext, func: cst.FunctionDef, name: str) -> bool:
    for node in ctx.index.walk.function_nodes(func):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name \
                and node.func.value.value == name and node.func.attr.value in ("setdefault", "update"):
            return True
        if type(node) is cst.AssignTarget and type(node.target) is cst.Subscript \
                and type(node.target.value) is cst.Name and node.target.value.value == name:
            return True
    return False


def _outer_keywords(ctx: LintContext, expr: cst.BaseExpression) -> bool:
    """``**kw`` where ``kw`` is the ``**`` parameter of an enclosing custom gradient."""
    if type(expr) is not cst.Name:
        return False
    func = ctx.index.enclosing(expr, (cst.FunctionDef,))
    while func is not None:
        star = func.params.star_kwarg  # type: ignore[union-attr]
        if star is not None and star.name.value == expr.value:
            return any(r.node is func for r in ctx.records)
        func = ctx.index.enclosing(func, (cst.FunctionDef,))
    return False


def _mapping_items(ctx: LintContext, expr: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]] | None:
    """The keys and values of a mapping spread with ``**`` when the file spells them: a dict
    literal, ``dict(k=v)``, or a name bound once to one of these."""
    if type(expr) is cst.Name:
        owner = ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
        values = ctx.index.env_for(owner).lookup(expr.value) or []
        if len(values) != 1 or not isinstance(values[0], cst.BaseExpression):
            return None
        expr = values[0]
    if type(expr) is cst.Dict:
        items = []
        for element in expr.elements:
            if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
                return None
            items.append((str(element.key.evaluated_value), element.value))
        return items
    if type(expr) is cst.Call and call_name(expr, ctx.index.qualnames) == "dict":
        if any(a.keyword is None for a in expr.args):
            return None
        return [(a.keyword.value, a.value) for a in expr.args if a.keyword is not None]
    return None


def _python_constant(ctx: LintContext, expr: cst.BaseExpression) -> bool:
    """A number, string, True/False/None (or a name bound only to those): never a tensor."""
    if type(expr) is cst.Name:
        if expr.value in ("True", "False", "None"):
            return True
        owner = ctx.index.enclosing(expr, (cst.FunctionDef, cst.Lambda))
        values = ctx.index.env_for(owner).lookup(expr.value) or []
        return bool(values) and all(isinstance(v, cst.BaseExpression) and _python_constant(ctx, v) for v in values)
    if type(expr) is cst.UnaryOperation:
        return _python_constant(ctx, expr.expression)
    return isinstance(expr, (cst.BaseNumber, cst.BaseString))
