"""CG017 unknown-static-shape: the static shape of a tf.numpy_function/tf.py_function result is
used before set_shape."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.analyses.tensors import body_nodes, return_values
from cg_lint.codes import CG017
from cg_lint.findings import Finding
from cg_lint.model.records import CustomGradient, FuncNode
from cg_lint.rules.base import LintContext, Rule, describe
from cg_lint.rules.graph_mode.graph_mode_shared import GRAPH, Reporter, graph_bodies
from cg_lint.syntax.index import FileIndex

_PY_FUNCTIONS = frozenset({"numpy_function", "py_function", "py_func", "eager_py_func"})
# TF ops whose shape argument must hold numbers (or be a tensor): a None inside fails
_SHAPE_ARGS = {"reshape": 1, "zeros": 0, "ones": 0, "fill": 0, "broadcast_to": 1, "tile": 1, "normal": 0,
               "uniform": 0, "truncated_normal": 0, "eye": 0}
# builtins that take a number, or iterate their argument
_NUMBER_BUILTINS = frozenset({"range", "int", "float"})
_ITERATING_BUILTINS = frozenset({"list", "tuple", "enumerate", "zip", "sum", "max", "min", "sorted"})


class UnknownStaticShape(Rule):
    """The static shape of a `tf.numpy_function`/`tf.py_function` result is used before `set_shape`.

    ## What it does
    Flags, in a custom gradient's forward and grad (and the functions nested in them), a use of the
    static shape of a name bound to the result of `tf.numpy_function`, `tf.py_function` or
    `tf.compat.v1.py_func` that needs it to be known: `y.shape[i]` used as a number (in
    arithmetic, in a shape list for `tf.reshape`/`tf.zeros`/`tf.ones`/`tf.fill`/`tf.broadcast_to`/
    `tf.tile`, in `range()`/`int()`), `y.shape.as_list()`, `len(y.shape)`, `y.shape.rank` (or
    `.ndims`) used as a number, and iterating or unpacking `y.shape`. The same for grad's upstream
    gradient when the forward returns such a result as its output: its upstream has no static shape
    either. A name given a shape with `y.set_shape(...)` (or rebound, `y = tf.ensure_shape(y, ...)`)
    is not flagged, nor is an upstream whose caller in the file sets the output's shape. A name bound
    more than once counts by the binding that reaches the use when straight-line code says which
    (every binding a plain `=` in the block of the use, no loop around it: the last one before the
    use's statement, so `y = tf.reshape(y, [-1, y.shape[-1]])` reads the `numpy_function` result
    bound before it); after a branch or in a loop it counts only when every binding is such a result.

    ## Why is this bad?
    TensorFlow cannot know what a Python kernel returns, so when traced (in `tf.function`, Keras
    `fit`, `tf.data`) the result's static shape is unknown, not even its rank: `y.shape[0]` is
    `None`, and `y.shape[0] * 2` raises `TypeError: unsupported operand type(s) for *: 'NoneType'
    and 'int'`, `tf.reshape(y, [-1, y.shape[-1]])` raises `TypeError: Failed to convert elements of
    [-1, None] to Tensor`, `y.shape.as_list()` raises `ValueError: as_list() is not defined on an
    unknown TensorShape.`, `len(y.shape)` raises `ValueError: Cannot take the length of shape with
    unknown rank.`, and `a, b = y.shape` raises `ValueError: Cannot iterate over a shape with unknown
    rank.` The gradient of such an output reaches grad without a shape too. Eagerly the result is
    a concrete tensor and every one of these works.

    ## Example
    ```python
    def _sort(a):
        return np.sort(a, axis=-1)

    @tf.custom_gradient
    def sort_rows(x):
        y = tf.numpy_function(_sort, [x], tf.float32)
        flat = tf.reshape(y, [-1, y.shape[-1]])
        return flat, lambda dy: tf.reshape(dy, tf.shape(x))
    ```

    ## Use instead
    ```python
    def _sort(a):
        return np.sort(a, axis=-1)

    @tf.custom_gradient
    def sort_rows(x):
        y = tf.numpy_function(_sort, [x], tf.float32)
        y.set_shape(x.shape)
        flat = tf.reshape(y, [-1, y.shape[-1]])
        return flat, lambda dy: tf.reshape(dy, tf.shape(x))
    ```

    ## Fix safety
    No automatic fix: the shape to set (`x.shape`, a known constant) is the author's knowledge.
    `tf.shape(y)[i]` is a tensor, known when the graph runs, where code may expect a number.
    """

    code = CG017
    VALID = (
        """
import numpy as np
import tensorflow as tf

def _sort(a):
    return np.sort(a, axis=-1)

@tf.custom_gradient
def sort_rows(x):
    y = tf.numpy_function(_sort, [x], tf.float32)
    y.set_shape(x.shape)  # the kernel keeps the shape: say so
    z = tf.py_function(_sort, [x], tf.float32)
    z = tf.ensure_shape(z, x.shape)
    n = tf.shape(y)[-1]  # a tensor: known when the graph runs
    flat = tf.reshape(y + z, [-1, n * 1]) + tf.zeros([1, y.shape[-1]]) + tf.zeros([z.shape[1]])
    return flat, lambda dy: tf.reshape(dy, tf.shape(x)) * 2.0

# tf: grad(sort_rows, [[3.0, 1.0], [2.0, 4.0]]) => both ok [[2.0, 2.0], [2.0, 2.0]]
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def f(x):
    y = tf.numpy_function(np.abs, [x], tf.float32)
    if y.shape[0] is None:  # asking is fine: None is an answer
        y = tf.identity(y)
    def grad(dy):
        return dy * tf.sign(x) * tf.ones([dy.shape[0]])
    return y, grad

def caller(x):
    out = f(x)
    out.set_shape(x.shape)  # the caller gives the output its shape, so grad's upstream has one
    return out

# tf: grad(caller, [-1.0, 2.0]) => both ok [-1.0, 1.0]
""",
        """
import numpy as np
import tensorflow as tf

def _sorted(x):
    y = tf.numpy_function(np.sort, [x], tf.float32)
    y.set_shape(x.shape)  # the helper gives its result a shape
    return y

@tf.custom_gradient
def sort_values(x):
    y = _sorted(x)
    return y * tf.ones([y.shape[0]]), lambda dy: dy

# tf: grad(sort_values, [2.0, 1.0]) => both ok [1.0, 1.0]
""",
        """
import numpy as np
import tensorflow as tf

EXACT = True  # a configuration flag

@tf.custom_gradient
def sort_rows(x):
    y = tf.numpy_function(np.sort, [x], tf.float32)
    y = tf.ensure_shape(y, x.shape)  # rebound to a shaped value before the use
    y = tf.reshape(y, [-1, y.shape[-1]])
    z = tf.numpy_function(np.sort, [x], tf.float32)
    z.set_shape(x.shape)
    z = tf.reshape(z, [-1, z.shape[-1]])  # a use after set_shape
    w = tf.numpy_function(np.sort, [x], tf.float32)
    if EXACT:  # a branch: each path gives w a shape, and order alone does not say which
        w = tf.ensure_shape(w, x.shape)
    else:
        w = tf.reshape(w, tf.shape(x))
        w = tf.ensure_shape(w, x.shape)
    if EXACT:
        v = tf.ensure_shape(w, x.shape)
        w = w * tf.ones([v.shape[-1]])
    return y + z + tf.ones([w.shape[-1]]), lambda dy: dy * 3.0

# tf: grad(sort_rows, [[3.0, 1.0]]) => both ok [[3.0, 3.0]]
""",
    )
    INVALID = (
        """
import numpy as np
import tensorflow as tf

def _sort(a):
    return np.sort(a, axis=-1)

@tf.custom_gradient
def sort_rows(x):
    y = tf.numpy_function(_sort, [x], tf.float32)
    flat = tf.reshape(y, [-1, y.shape[-1]])  # expect: CG017
    return flat, lambda dy: tf.reshape(dy, tf.shape(x))

# tf: grad(sort_rows, [[3.0, 1.0], [2.0, 4.0]]) => eager ok [[1.0, 1.0], [1.0, 1.0]]; graph raises [-1, None]
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def clip_kernel(x):
    y = tf.py_function(lambda a: tf.clip_by_value(a, -1.0, 1.0), [x], tf.float32)
    def grad(dy):
        rows, cols = dy.shape  # expect: CG017
        return dy * tf.ones([rows, cols])
    return y, grad

# tf: grad(clip_kernel, [[3.0, 0.5]]) => eager ok [[1.0, 1.0]]; graph raises Cannot iterate over a shape
""",
        """
import numpy as np
import tensorflow as tf

@tf.custom_gradient
def stats(x):
    a, b = tf.numpy_function(lambda v: (v * 2, v * 3), [x], [tf.float32, tf.float32])
    dims = a.shape.as_list()  # expect: CG017
    rank = len(b.shape)  # expect: CG017
    order = list(range(b.shape.rank))  # expect: CG017
    return a + b, lambda dy: dy * 5.0

# tf: grad(stats, [1.0, 2.0]) => eager ok [5.0, 5.0]; graph raises as_list() is not defined on an unknown TensorShape
""",
        """
import numpy as np
import tensorflow as tf

def _sorted(x):
    return tf.numpy_function(np.sort, [x], tf.float32)

@tf.custom_gradient
def sort_values(x):
    y = _sorted(x)
    return y * tf.ones([y.shape[0]]), lambda dy: dy  # expect: CG017

@tf.custom_gradient
def sorted_output(x):
    def grad(dy):
        return tf.reshape(dy, [dy.shape[0]])  # expect: CG017
    return _sorted(x), grad

# tf: grad(sort_values, [2.0, 1.0]) => eager ok [1.0, 1.0]; graph raises Expected int32, but got None
# tf: grad(sorted_output, [2.0, 1.0]) => eager ok [1.0, 1.0]; graph raises [None]
""",
        """
import numpy as np
import tensorflow as tf

def _sin_and_slope(a):
    return np.sin(a), np.cos(a)

@tf.custom_gradient
def np_sin(x):
    y, slope = tf.numpy_function(_sin_and_slope, [x], [tf.float32, tf.float32])
    y = tf.reshape(y, [-1, y.shape[-1]])  # expect: CG017
    def grad(dy):
        return tf.reshape(dy, tf.shape(x)) * slope
    return y, grad

@tf.custom_gradient
def sort_again(x):
    y = tf.ensure_shape(x, x.shape)
    width = tf.ones([y.shape[-1]])  # the shaped binding reaches this use: fine
    y = tf.numpy_function(np.sort, [x], tf.float32)  # the py_function result reaches the next use
    return y * tf.ones([y.shape[0]]) * width, lambda dy: dy  # expect: CG017

# tf: grad(np_sin, [[0.0, 1.0]]) => eager ok [[1.0, 0.5403; graph raises [-1, None]
# tf: grad(sort_again, [2.0, 1.0]) => eager ok [1.0, 1.0]; graph raises Expected int32, but got None
""",
    )

    def check(self, ctx: LintContext) -> Iterator[Finding]:
        for record in ctx.records:
            bodies = graph_bodies(ctx, record)
            if not bodies:
                continue
            report = Reporter(self, ctx, record)
            unknown, some = _unknown_names(ctx.index, bodies)
            upstream = _unknown_upstream(ctx, record, unknown)
            if not some and not upstream:
                continue
            shaped = _shaped_names(ctx.index, bodies)
            for func, who in bodies:
                for node in body_nodes(func, ctx.index):
                    if type(node) is not cst.Name or node.value in shaped:
                        continue
                    use = _shape_use(ctx.index, node)  # first: cheaper than asking which binding reaches
                    if use is None:
                        continue
                    origin = _origin(ctx.index, node, unknown, some, upstream, func)
                    if origin is None:
                        continue
                    text, error = use
                    finding = report(node, (
                        f"{who} uses {text}, but {node.value} {origin}, whose static shape is unknown "
                        f"{GRAPH}: {error}; give it a shape first ({node.value}.set_shape(...) "
                        f"or tf.ensure_shape) or use tf.shape({node.value})"))
                    if finding:
                        yield finding


def _py_function_call(index: FileIndex, expr: cst.BaseExpression | None) -> str | None:
    """``tf.numpy_function`` when ``expr`` is a call of it (or of tf.py_function..., or an item of
    its list result)."""
    if type(expr) is cst.Subscript:
        expr = expr.value
    if type(expr) is not cst.Call:
        return None
    name = call_name(expr, index.qualnames) or ""
    last = name.rsplit(".", 1)[-1]
    return f"tf.{last}" if name.startswith("tensorflow.") and last in _PY_FUNCTIONS else None


def _shapeless(index: FileIndex, expr: cst.BaseExpression | None) -> str | None:
    """Where a value without a static shape comes from: a py_function call, or a call of a plain
    module-level function of the file that returns one (one call deep, not given a shape there)."""
    direct = _py_function_call(index, expr)
    if direct is not None:
        return f"comes from {direct}"
    if type(expr) is not cst.Call or type(expr.func) is not cst.Name:
        return None
    found = index.lookup_function(expr.func)
    if len(found) != 1 or type(found[0]) is not cst.FunctionDef or found[0].decorators:
        return None
    helper = found[0]
    if index.enclosing(helper, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) is not None:
        return None
    returns = return_values(index, helper)
    env = index.env_for(helper)
    origins = set()
    for value in returns:
        origin = _py_function_call(index, value)
        if origin is None and type(value) is cst.Name:
            bound = env.bindings.get(value.value) or []
            kinds = {_py_function_call(index, b) if isinstance(b, cst.BaseExpression) else None for b in bound}
            origin = kinds.pop() if len(kinds) == 1 else None
        if origin is None:
            return None
        origins.add(origin)
    if not origins or _shaped_names(index, [(helper, "")]):
        return None  # a helper that gives something a shape: unsure
    return f"comes from {origins.pop()} in helper '{helper.name.value}'" if len(origins) == 1 else None


def _unknown_names(index: FileIndex, bodies: list[tuple[FuncNode, str]]
                   ) -> tuple[dict[tuple[int, str], str], set[tuple[int, str]]]:
    """(id of the binding function, name) -> where its value comes from, for names every binding
    of which has no static shape (``y = tf.numpy_function(...)``, ``a, b = tf.numpy_function(...)``,
    ``y = helper(x)`` of a helper returning one); and the keys of names some binding of which has
    none (which one reaches a use is asked where it is used)."""
    found: dict[tuple[int, str], str] = {}
    counts: dict[tuple[int, str], int] = {}
    for func, _ in bodies:
        if type(func) is not cst.FunctionDef:
            continue
        for node in body_nodes(func, index):
            if type(node) is not cst.Assign:
                continue
            origin = _shapeless(index, node.value)
            if origin is None:
                continue
            for target in node.targets:
                bound = target.target
                names = [bound] if type(bound) is cst.Name else [
                    e.value for e in bound.elements] if type(bound) in (cst.Tuple, cst.List) else []  # type: ignore[attr-defined]
                for name in names:
                    if type(name) is cst.Name:
                        key = (id(func), name.value)
                        found[key] = origin
                        counts[key] = counts.get(key, 0) + 1
    env_of = {id(func): index.env_for(func) for func, _ in bodies}
    every = {key: why for key, why in found.items()
             if len(env_of[key[0]].bindings.get(key[1], ())) == counts[key]}
    return every, set(found)


def _shaped_names(index: FileIndex, bodies: list[tuple[FuncNode, str]]) -> set[str]:
    """Names some body calls ``.set_shape`` on, or tests against None: their shape is handled."""
    out: set[str] = set()
    for func, _ in bodies:
        for node in body_nodes(func, index):
            if (type(node) is cst.Call and type(node.func) is cst.Attribute
                    and node.func.attr.value == "set_shape" and type(node.func.value) is cst.Name):
                out.add(node.func.value.value)
            elif type(node) in (cst.If, cst.IfExp, cst.Assert):
                words = _names_in(index, node.test)  # type: ignore[attr-defined]
                if "None" in words:
                    out.update(words)
    return out


def _names_in(index: FileIndex, expr: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            out.add(node.value)
        stack.extend(index.walk.children(node))
    return out


def _unknown_upstream(ctx: LintContext, record: CustomGradient, unknown: dict[tuple[int, str], str]
                      ) -> dict[tuple[int, str], str]:
    """Grad's upstream parameters whose output is a py_function result, unless a caller in the file
    sets that output's shape."""
    out: dict[tuple[int, str], str] = {}
    if not record.returns or _callers_shape_output(ctx, record):
        return out
    for ret in record.returns:
        if ret.grad is None or ret.outputs is None or ret.grad.is_custom_gradient:
            continue
        outputs = ret.outputs
        elements = [e.value for e in outputs.elements] if type(outputs) in (cst.Tuple, cst.List) else [outputs]
        upstream = ret.grad.upstream
        if len(upstream) != len(elements):
            continue
        for param, element in zip(upstream, elements):
            made = _made_by(ctx.index, element, unknown, record.node)
            if made is not None:
                out[(id(ret.grad.node), param.name)] = f"is the upstream gradient of an output that {made}"
    return out


def _made_by(index: FileIndex, expr: cst.BaseExpression, unknown: dict[tuple[int, str], str],
             func: FuncNode) -> str | None:
    origin = _shapeless(index, expr)
    if origin is not None:
        return origin
    return unknown.get((id(func), expr.value)) if type(expr) is cst.Name else None


def _callers_shape_output(ctx: LintContext, record: CustomGradient) -> bool:
    """A function of the file that calls the custom gradient and gives a tensor a shape
    (``out.set_shape(...)``, ``tf.ensure_shape``): the output may have one, and so its upstream."""
    for site in record.call_sites:
        owner = ctx.index.enclosing(site.node, (cst.FunctionDef,))
        if type(owner) is not cst.FunctionDef:
            continue
        for node in ctx.index.walk.function_nodes(owner):
            if type(node) is cst.Call and type(node.func) in (cst.Attribute, cst.Name) and (
                    node.func.attr.value if type(node.func) is cst.Attribute else node.func.value  # type: ignore[union-attr]
            ) in ("set_shape", "ensure_shape"):
                return True
    return False


def _origin(index: FileIndex, name: cst.Name, unknown: dict[tuple[int, str], str], some: set[tuple[int, str]],
            upstream: dict[tuple[int, str], str], func: FuncNode) -> str | None:
    """Why this name has no static shape: it is bound (here or in an enclosing body) to a py_function
    result, or it is an upstream parameter of grad."""
    key = (id(func), name.value)
    if key in upstream:
        return upstream[key]
    owner: cst.CSTNode | None = func
    while owner is not None:
        env = index.env_for(owner)
        if name.value in env.bindings or name.value in env.params:
            found = unknown.get((id(owner), name.value))
            if found is None and owner is func and (id(owner), name.value) in some:
                found = _reaching_origin(index, name)  # straight-line code may say which binding reaches it
            return found
        owner = index.enclosing(owner, (cst.FunctionDef, cst.Lambda))
    return None


def _reaching_origin(index: FileIndex, name: cst.Name) -> str | None:
    """Where the value of the binding that reaches ``name`` comes from, when straight-line code
    decides which one does (``y = tf.numpy_function(...)`` then ``y = tf.reshape(y, [-1, y.shape[-1]])``)
    and it has no static shape."""
    assign = index.reaching_assign(name)
    if assign is None:
        return None
    for target in assign.targets:
        bound = target.target
        names = [bound] if type(bound) is cst.Name else [
            e.value for e in bound.elements] if type(bound) in (cst.Tuple, cst.List) else []  # type: ignore[attr-defined]
        if any(type(n) is cst.Name and n.value == name.value for n in names):
            return _shapeless(index, assign.value)
    return None


def _shape_use(index: FileIndex, name: cst.Name) -> tuple[str, str] | None:
    """How ``name``'s static shape is used where it must be known: (the text, what happens)."""
    shape = index.parent(name)
    if type(shape) is not cst.Attribute or shape.value is not name or shape.attr.value not in ("shape", "get_shape"):
        return None
    if shape.attr.value == "get_shape":
        call = index.parent(shape)
        if type(call) is not cst.Call:
            return None
        shape = call  # y.get_shape() is y.shape
    label = f"{name.value}.shape"
    parent = index.parent(shape)
    if type(parent) is cst.Subscript and parent.value is shape and len(parent.slice) == 1:
        return _dimension_use(index, parent)
    if type(parent) is cst.Attribute and parent.value is shape:
        attr = parent.attr.value
        if attr == "as_list" and type(index.parent(parent)) is cst.Call:
            return f"{label}.as_list()", "this raises ValueError: as_list() is not defined on an unknown TensorShape"
        if attr in ("rank", "ndims") and _used_as_number(index, parent):
            return f"{label}.{attr} as a number", f"{label}.{attr} is None there, and {_AS_NUMBER}"
        return None
    return _whole_shape_use(index, shape, label)


_AS_NUMBER = "using it as a number raises TypeError"
_ITERATE = "this raises ValueError: Cannot iterate over a shape with unknown rank"


def _dimension_use(index: FileIndex, subscript: cst.Subscript) -> tuple[str, str] | None:
    """``y.shape[i]`` used as a number."""
    index_node = subscript.slice[0].slice
    if type(index_node) is not cst.Index or not _integer(index_node.value) or not _used_as_number(index, subscript):
        return None
    text = describe(subscript)
    return f"{text} as a number", f"{text} is None there, and {_AS_NUMBER}"


def _whole_shape_use(index: FileIndex, shape: cst.CSTNode, label: str) -> tuple[str, str] | None:
    """``len(y.shape)``, ``list(y.shape)``, ``a, b = y.shape``, ``for d in y.shape``."""
    parent = index.parent(shape)
    if type(parent) is cst.Arg:
        call = index.parent(parent)
        if type(call) is cst.Call and type(call.func) is cst.Name and call.args[0] is parent:
            builtin = call.func.value
            if index.enclosing_env_binds(call.func):
                return None
            if builtin == "len":
                return f"len({label})", "this raises ValueError: Cannot take the length of shape with unknown rank"
            if builtin in _ITERATING_BUILTINS:
                return f"{builtin}({label})", _ITERATE
        return None
    if type(parent) is cst.Assign and parent.value is shape and any(
            type(t.target) in (cst.Tuple, cst.List) for t in parent.targets):
        return f"unpacking {label}", _ITERATE
    if type(parent) in (cst.For, cst.CompFor) and parent.iter is shape:  # type: ignore[attr-defined]
        return f"iterating {label}", _ITERATE
    return None


def _integer(expr: cst.BaseExpression) -> bool:
    if type(expr) is cst.UnaryOperation and type(expr.operator) is cst.Minus:
        expr = expr.expression
    return type(expr) is cst.Integer


def _used_as_number(index: FileIndex, node: cst.CSTNode) -> bool:
    parent = index.parent(node)
    if type(parent) is cst.BinaryOperation:
        return True
    if type(parent) is cst.Element:
        literal = index.parent(parent)
        arg = index.parent(literal) if type(literal) in (cst.List, cst.Tuple) else None
        call = index.parent(arg) if type(arg) is cst.Arg else None
        if type(call) is cst.Call:
            name = call_name(call, index.qualnames) or ""
            if not name.startswith("tensorflow."):
                return False
            position = _SHAPE_ARGS.get(name.rsplit(".", 1)[-1])
            positional = [a for a in call.args if a.keyword is None]
            if position is None:
                return False
            if arg in positional:
                return positional.index(arg) == position  # type: ignore[arg-type]
            return arg.keyword is not None and arg.keyword.value == "shape"  # type: ignore[union-attr]
        return False
    if type(parent) is cst.Arg:
        call = index.parent(parent)
        return (type(call) is cst.Call and type(call.func) is cst.Name and call.func.value in _NUMBER_BUILTINS
                and not index.enclosing_env_binds(call.func))
    return False
