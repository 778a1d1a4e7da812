"""What the source says about each parameter of a function: rank, related dimensions, dtype kind.

Read from the function's own body (nested functions included: a custom gradient defined inside
its caller sees the caller's names): operands of ``matmul``/``@``, ``einsum``, ``gather`` and
``embedding_lookup`` (integer ids), convolutions, ``x.shape[-1]``, reductions over an axis,
square-matrix ops, and Python-value uses (``range(n)``, ``axis=n``, a name inside a shape list).
Annotations (``n: int``) count too. Nothing is imported or run here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# keyword arguments that take a Python int (or an int tensor TF folds), never a float tensor
INT_KEYWORDS = frozenset({
    "axis", "depth", "k", "num", "num_or_size_splits", "multiples", "repeats", "shift", "size", "num_segments",
    "batch_dims", "units", "filters", "num_classes", "num_splits", "rank", "ord", "seq_axis", "batch_axis",
})
# calls whose argument list is a shape: a parameter inside it is a Python int
SHAPE_CALLS = frozenset({"reshape", "zeros", "ones", "fill", "broadcast_to", "tile", "random_normal", "normal",
                         "uniform", "truncated_normal", "eye"})
POOL_CALLS = frozenset({"avg_pool", "max_pool", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d", "max_pool2d",
                        "max_pool3d", "pool", "space_to_depth", "space_to_batch", "space_to_batch_nd"})
NUMPY_ARRAY_CALLS = frozenset({"np.array", "np.asarray", "numpy.array", "numpy.asarray"})
# of those, the ones whose first argument is the data, not a shape
DATA_FIRST = frozenset({"reshape", "broadcast_to", "tile"})
PYTHON_INT_CALLS = frozenset({"range", "int", "repeat", "len"})
SHAPE_KEYWORDS = frozenset({"shape", "sample_shape", "batch_shape", "event_shape", "output_shape"})
MATMUL_CALLS = frozenset({"matmul", "batch_matmul", "matvec"})
GATHER_CALLS = frozenset({"gather", "embedding_lookup", "batch_gather"})
CONV_RANKS = {"conv1d": 3, "conv2d": 4, "conv3d": 5, "depthwise_conv2d": 4, "separable_conv2d": 4,
              "conv2d_transpose": 4, "conv1d_transpose": 3, "conv3d_transpose": 5, "convolution": 0}
SQUARE_CALLS = frozenset({"cholesky", "inv", "det", "logdet", "slogdet", "matrix_inverse", "matrix_determinant",
                          "eigh", "eigvalsh", "cholesky_solve", "expm", "sqrtm", "logm", "trace", "matrix_square_root",
                          "triangular_solve", "lu"})
SPD_CALLS = frozenset({"cholesky", "logdet", "cholesky_solve", "eigh", "sqrtm", "matrix_square_root"})
AXIS_CALLS_PREFIX = ("reduce_",)
AXIS_CALLS = frozenset({"softmax", "log_softmax", "argmax", "argmin", "cumsum", "cumprod", "reverse", "norm",
                        "moments", "l2_normalize", "logsumexp", "unstack", "top_k", "sort", "argsort"})


@dataclass
class Facts:
    """Per-parameter facts. Dimension positions may be negative (from the end)."""

    names: list[str]
    kind: dict[str, str] = field(default_factory=dict)  # tensor | index | int | float | bool
    min_rank: dict[str, int] = field(default_factory=dict)
    rank: dict[str, int] = field(default_factory=dict)
    equal: list[tuple[str, int, str, int]] = field(default_factory=list)
    square: set[str] = field(default_factory=set)
    spd: set[str] = field(default_factory=set)
    bound: dict[str, tuple[str, int]] = field(default_factory=dict)  # ids -> (table, axis)
    why: dict[str, str] = field(default_factory=dict)  # name -> what in the source said so
    defaults: dict[str, Any] = field(default_factory=dict)  # passed as their Python-number default
    # ranks an ``assert`` demands: they overrule what the calls suggest (a name reassigned before
    # a conv reads as the conv's kernel, the assert's rank is the caller's)
    asserted: dict[str, int] = field(default_factory=dict)
    # the function pools or strides (``avg_pool``, ``strides=[1, 1, s, s]``): the sizes it is
    # written for divide by its stride, so made-up sizes are even (still distinct)
    strided: bool = False

    def need_rank(self, name: str, rank: int, why: str) -> None:
        if name in self.names and rank > self.min_rank.get(name, 0):
            self.min_rank[name] = rank
            self.why.setdefault(name, why)

    def set_kind(self, name: str, kind: str, why: str) -> None:
        if name in self.names and self.kind.get(name, "tensor") in ("tensor", "float"):
            self.kind[name] = kind
            self.why[name] = why

    @property
    def structured(self) -> bool:
        return bool(self.min_rank or self.rank or self.equal or self.bound or self.square)


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return dotted(node.func)
    return ""


def _name(node: ast.AST | None) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return None


def _arg(call: ast.Call, index: int, *keywords: str) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    return call.args[index] if len(call.args) > index else None


def _true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def find_function(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def named by a ``__qualname__`` (``Cls.method``, ``outer.<locals>.inner``)."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    scope: list[ast.stmt] = tree.body
    found: ast.AST | None = None
    for part in parts:
        found = None
        for node in ast.walk(ast.Module(body=scope, type_ignores=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part:
                found = node
                break
        if found is None:
            return None
        scope = found.body  # type: ignore[attr-defined]
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _rank_of_axis(axis: int) -> int:
    return axis + 1 if axis >= 0 else -axis


def _einsum(call: ast.Call, facts: Facts) -> None:
    spec = call.args[0] if call.args else None
    if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
        return
    inputs = spec.value.replace(" ", "").split("->")[0].split(",")
    operands = call.args[1:]
    letters: dict[str, tuple[str, int]] = {}
    for subscripts, operand in zip(inputs, operands):
        name = _name(operand)
        if name is None or "." in subscripts:
            continue
        facts.rank.setdefault(name, len(subscripts))
        facts.need_rank(name, len(subscripts), f"einsum '{spec.value}'")
        for position, letter in enumerate(subscripts):
            if letter in letters:
                other, other_position = letters[letter]
                facts.equal.append((other, other_position, name, position))
            else:
                letters[letter] = (name, position)


def _matmul(a: ast.AST | None, b: ast.AST | None, call: ast.Call | None, facts: Facts, how: str) -> None:
    left, right = _name(a), _name(b)
    transpose_a = call is not None and any(_true(_arg(call, 99, k)) for k in ("transpose_a", "adjoint_a"))
    transpose_b = call is not None and any(_true(_arg(call, 99, k)) for k in ("transpose_b", "adjoint_b"))
    vector_b = call is not None and dotted(call.func).endswith("matvec")
    for name in (left, right):
        if name is not None:
            facts.need_rank(name, 1 if (name == right and vector_b) else 2, how)
    if left is not None and right is not None:
        contracted_b = -1 if (transpose_b or vector_b) else -2
        facts.equal.append((left, -2 if transpose_a else -1, right, contracted_b))


# what is read off a tensor without making it a number: ``int(x.shape[1])``, ``len(x)``
SHAPE_READS = frozenset({"shape", "get_shape", "ndim", "ndims", "rank", "dtype"})
SHAPE_READ_CALLS = frozenset({"shape", "size", "rank", "len", "shape_n"})


def _shape_read_names(node: ast.AST) -> set[int]:
    """ids of the Name nodes under ``node`` whose shape, not value, is read."""
    out: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in SHAPE_READS and isinstance(sub.value, ast.Name):
            out.add(id(sub.value))
        elif isinstance(sub, ast.Call) and dotted(sub.func).rsplit(".", 1)[-1] in SHAPE_READ_CALLS:
            out.update(id(a) for a in sub.args if isinstance(a, ast.Name))
    return out


def _python_names(node: ast.AST, facts: Facts, kind: str, why: str) -> None:
    shape_reads = _shape_read_names(node)
    for sub in ast.walk(node):
        if id(sub) in shape_reads:
            continue  # a tensor whose dimension is taken (``int(x.shape[1])``): not a number
        name = _name(sub)
        if name is not None:
            facts.set_kind(name, kind, why)


def _call(call: ast.Call, facts: Facts) -> None:  # noqa: C901 (a table of cases)
    full = dotted(call.func)
    last = full.rsplit(".", 1)[-1]
    first = _name(_arg(call, 0, "a", "x", "input", "params", "tensor", "input_tensor", "logits", "value"))
    if last in MATMUL_CALLS:
        _matmul(_arg(call, 0, "a"), _arg(call, 1, "b"), call, facts, f"{last}()")
    elif last == "einsum":
        _einsum(call, facts)
    elif last in GATHER_CALLS:
        table = _name(_arg(call, 0, "params"))
        ids = _name(_arg(call, 1, "indices", "ids"))
        axis = _int(_arg(call, 2, "axis")) or 0
        if ids is not None:
            facts.set_kind(ids, "index", f"indices of {last}()")
            if table is not None:
                facts.bound[ids] = (table, axis)
        if table is not None:
            # rows of a [vocabulary, features] table: rank 2 unless the axis needs more
            facts.need_rank(table, max(2, _rank_of_axis(axis)) if axis >= 0 else 2, f"table of {last}()")
    elif last == "one_hot":
        ids = _name(_arg(call, 0, "indices"))
        if ids is not None:
            facts.set_kind(ids, "index", "indices of one_hot()")
    elif last in CONV_RANKS:
        data = _name(_arg(call, 0, "input", "x", "value"))
        kernel = _name(_arg(call, 1, "filters", "filter", "kernel"))
        rank = CONV_RANKS[last] or 3
        for name in (data, kernel):
            if name is not None:
                facts.need_rank(name, rank, f"{last}()")
                if CONV_RANKS[last]:
                    facts.rank.setdefault(name, rank)
        if data is not None and kernel is not None and "transpose" not in last and "depthwise" not in last:
            facts.equal.append((data, -1, kernel, -2))
    elif last in SQUARE_CALLS and first is not None:
        facts.need_rank(first, 2, f"{last}()")
        facts.square.add(first)
        if last in SPD_CALLS:
            facts.spd.add(first)
    elif (last.startswith(AXIS_CALLS_PREFIX) or last in AXIS_CALLS) and first is not None:
        axis_node = _arg(call, 1, "axis")
        axes = axis_node.elts if isinstance(axis_node, (ast.List, ast.Tuple)) else [axis_node]
        for reduced in (_int(a) for a in axes):
            if reduced is not None:
                facts.need_rank(first, _rank_of_axis(reduced), f"{last}(axis={reduced})")
    if last in POOL_CALLS or any(k.arg in ("strides", "stride") and not _all_ones(k.value) for k in call.keywords):
        facts.strided = True
    if full in NUMPY_ARRAY_CALLS and first is not None and first != facts.names[0]:
        # a filter kernel or a table given as a list: configuration made into a NumPy array,
        # which a tensor cannot be under tf.function (the first parameter is the data)
        facts.set_kind(first, "array", f"{full}()")
    if "seed" in last.lower():  # sanitize_seed(seed), split_seed(seed): an integer seed
        for arg in call.args[:1]:
            if _name(arg) is not None:
                facts.set_kind(arg.id, "int", "a seed")  # type: ignore[attr-defined]
    if isinstance(call.func, ast.Name) and call.func.id in facts.names:
        facts.set_kind(call.func.id, "callable", "called as a function")
    if last in PYTHON_INT_CALLS and full in PYTHON_INT_CALLS:
        for arg in call.args:
            _python_names(arg, facts, "int", f"{last}()")
    if last in SHAPE_CALLS:
        shape = _arg(call, 1 if last in ("reshape", "broadcast_to", "tile", "fill") else 0, "shape", "multiples")
        if isinstance(shape, (ast.List, ast.Tuple)):
            for element in shape.elts:
                _python_names(element, facts, "int", f"a dimension in {last}()")
    for keyword in call.keywords:
        if keyword.arg in INT_KEYWORDS and _name(keyword.value) is not None:
            facts.set_kind(keyword.value.id, "int", f"{keyword.arg}=")  # type: ignore[attr-defined]
        elif keyword.arg == "seed" and _name(keyword.value) is not None:
            facts.set_kind(keyword.value.id, "int", "a seed")  # type: ignore[attr-defined]
        elif keyword.arg in SHAPE_KEYWORDS and _name(keyword.value) is not None:
            facts.set_kind(keyword.value.id, "shape", f"{keyword.arg}=")  # type: ignore[attr-defined]
    if last in SHAPE_CALLS and last not in DATA_FIRST:
        whole = _name(_arg(call, 0, "shape", "dims"))
        if whole is not None:
            facts.set_kind(whole, "shape", f"the shape of {last}()")


def _subscript(node: ast.Subscript, facts: Facts) -> None:
    value, index = node.value, node.slice
    # x.shape[k], tf.shape(x)[k], x.get_shape()[k]
    shaped = None
    if isinstance(value, ast.Attribute) and value.attr == "shape":
        shaped = _name(value.value)
    elif isinstance(value, ast.Call) and dotted(value.func).rsplit(".", 1)[-1] in ("shape", "get_shape"):
        shaped = _name(value.args[0]) if value.args else _name(getattr(value.func, "value", None))
    if shaped is not None:
        k = _int(index)
        if k is not None:
            facts.need_rank(shaped, _rank_of_axis(k), f"{shaped}.shape[{k}]")
        return
    target = _name(value)
    if target is None:
        return
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    used = [e for e in elements if not (isinstance(e, ast.Constant) and e.value is Ellipsis)
            and not (isinstance(e, ast.Constant) and e.value is None)]
    if used:
        facts.need_rank(target, len(used), f"{target}[...] indexing")
    for element in used:
        if _name(element) is not None:
            facts.set_kind(element.id, "int", "an index")  # type: ignore[attr-defined]


def _all_ones(node: ast.AST) -> bool:
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_int(e) == 1 for e in node.elts)
    return _int(node) == 1


# calls that make a new tensor of the shape given first (noise, masks): not reshape or tile
NEW_TENSOR_CALLS = frozenset({"normal", "uniform", "truncated_normal", "random_normal", "random_uniform",
                              "zeros", "ones", "stateless_normal", "stateless_uniform", "bernoulli"})


def _made_like(call: ast.Call, facts: Facts, lists: Mapping[str, ast.AST]) -> None:
    """``tf.random.uniform([tf.shape(x)[0], 1, 1, 1])``: noise made with one of x's dimensions
    and ones elsewhere is broadcast against x, so x has that many dimensions (a per-example
    gate of an NHWC batch). Through a local name for the list too."""
    if dotted(call.func).rsplit(".", 1)[-1] not in NEW_TENSOR_CALLS:
        return
    shape = _arg(call, 0, "shape")
    if isinstance(shape, ast.Name):
        shape = lists.get(shape.id)
    if not isinstance(shape, (ast.List, ast.Tuple)) or len(shape.elts) < 2:
        return
    for element in shape.elts:
        if isinstance(element, ast.Subscript):
            value = element.value
            owner = None
            if isinstance(value, ast.Attribute) and value.attr == "shape":
                owner = _name(value.value)
            elif isinstance(value, ast.Call) and dotted(value.func).rsplit(".", 1)[-1] == "shape" and value.args:
                owner = _name(value.args[0])
            if owner is not None:
                facts.need_rank(owner, len(shape.elts), f"noise shaped like {owner}")


def _rank_read(node: ast.AST) -> str | None:
    """The parameter whose rank ``node`` reads: ``x.shape.ndims``, ``x.shape.rank``, ``x.ndim``,
    ``len(x.shape)``, ``tf.rank(x)``."""
    if isinstance(node, ast.Attribute):
        if node.attr in ("ndims", "rank") and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return _name(node.value.value)
        if node.attr == "ndim":
            return _name(node.value)
    if isinstance(node, ast.Call) and len(node.args) == 1:
        last = dotted(node.func).rsplit(".", 1)[-1]
        arg = node.args[0]
        if last == "len" and isinstance(arg, ast.Attribute) and arg.attr == "shape":
            return _name(arg.value)
        if last == "rank" and dotted(node.func) != "rank":
            return _name(arg)
    return None


def _asserted_ranks(test: ast.AST, facts: Facts) -> None:
    """``assert x.shape.ndims == 4 and ...``: the function refuses any other rank."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            _asserted_ranks(value, facts)
        return
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return
    left, op, right = test.left, test.ops[0], test.comparators[0]
    name, bound = _rank_read(left), _int(right)
    if name is None or bound is None or bound < 0:
        return
    if isinstance(op, ast.Eq) and name in facts.names:
        facts.asserted.setdefault(name, bound)
        facts.why.setdefault(name, f"assert on {name}'s rank")
    elif isinstance(op, (ast.GtE, ast.Gt)):
        facts.need_rank(name, bound + isinstance(op, ast.Gt), f"assert on {name}'s rank")


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef, facts: Facts) -> None:
    for arg in [*function.args.posonlyargs, *function.args.args]:
        annotation = dotted(arg.annotation) if arg.annotation is not None else ""
        kind = {"int": "int", "float": "float", "bool": "bool"}.get(annotation)
        if kind is not None and arg.arg in facts.names:
            facts.kind[arg.arg] = kind
            facts.why[arg.arg] = f"annotated {annotation}"


# a last reading of a body once its facts are in: (the function, its facts)
Finish = Callable[[ast.AST, Facts], None]


def facts_for(function: ast.FunctionDef | ast.AsyncFunctionDef | None, names: list[str],
              module: ast.Module | None = None, depth: int = 2, finish: Finish | None = None) -> Facts:
    """Facts about ``names`` from ``function``'s body, and from the bodies of same-module helpers it
    passes them to (``return _fwd(matrix, rhs)``: what ``_fwd`` does with them), ``depth`` calls deep.
    ``finish`` reads the body once more with all of them known (inputs/channels.py: per-channel
    parameters), for the function and each helper alike; it sits above this module, so it is passed in."""
    facts = Facts(list(names))
    if function is None:
        return facts
    _annotations(function, facts)
    lists = {n.targets[0].id: n.value for n in ast.walk(function)
             if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
             and isinstance(n.value, (ast.List, ast.Tuple))}
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            _call(node, facts)
            _made_like(node, facts, lists)
            if module is not None and depth > 0:
                _through_helper(node, facts, module, depth, finish)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            _matmul(node.left, node.right, None, facts, "the @ operator")
        elif isinstance(node, ast.Subscript):
            _subscript(node, facts)
        elif isinstance(node, ast.Assert):
            _asserted_ranks(node.test, facts)
    for name, rank in facts.rank.items():
        facts.min_rank[name] = max(facts.min_rank.get(name, 0), rank)
    for name, rank in facts.asserted.items():
        facts.rank[name] = facts.min_rank[name] = rank
    if finish is not None:
        finish(function, facts)
    return facts


def _module_functions(module: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _scaled(node: ast.AST, facts: Facts) -> str | None:
    """``x * gain``, ``x + 1.0``: one of our parameters, with its shape, combined with something
    that is not one of them."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.Add, ast.Sub))):
        return None
    ours = [side for side in (node.left, node.right) if _name(side) in facts.names]
    if len(ours) != 1:
        return None
    other = node.right if ours[0] is node.left else node.left
    if any(_name(sub) in facts.names for sub in ast.walk(other)):
        return None
    return _name(ours[0])


def _through_helper(call: ast.Call, facts: Facts, module: ast.Module, depth: int,  # noqa: C901 (a table of cases)
                    finish: Finish | None) -> None:
    if not isinstance(call.func, ast.Name):
        return
    helper = _module_functions(module).get(call.func.id)
    if helper is None:
        return
    params = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
    mapping = {}  # the helper's parameter -> ours
    for param, arg in zip(params, call.args):
        name = _name(arg) or _scaled(arg, facts)
        if name is not None and name in facts.names and not isinstance(arg, ast.Starred):
            mapping[param] = name
    for keyword in call.keywords:
        if keyword.arg in params and _name(keyword.value) in facts.names:
            mapping[keyword.arg] = keyword.value.id  # type: ignore[attr-defined]
    if not mapping:
        return
    inner = facts_for(helper, list(mapping), module, depth - 1, finish)
    for theirs, ours in mapping.items():
        if theirs in inner.kind:
            facts.set_kind(ours, inner.kind[theirs], inner.why.get(theirs, f"in {helper.name}()"))
        if theirs in inner.min_rank:
            facts.need_rank(ours, inner.min_rank[theirs], f"in {helper.name}()")
        if theirs in inner.rank:
            facts.rank.setdefault(ours, inner.rank[theirs])
        if theirs in inner.asserted:
            facts.asserted.setdefault(ours, inner.asserted[theirs])
        if theirs in inner.square:
            facts.square.add(ours)
        if theirs in inner.spd:
            facts.spd.add(ours)
    facts.strided = facts.strided or inner.strided
    for a, pa, b, pb in inner.equal:
        if a in mapping and b in mapping:
            facts.equal.append((mapping[a], pa, mapping[b], pb))
    for ids, (table, axis) in inner.bound.items():
        if ids in mapping and table in mapping:
            facts.bound[mapping[ids]] = (mapping[table], axis)


# -- literal shapes at call sites ------------------------------------------------------------------------

TENSOR_MAKERS = frozenset({"ones", "zeros", "fill", "normal", "uniform", "truncated_normal", "random_normal",
                           "random_uniform", "randn", "rand", "empty", "full", "standard_normal"})


@dataclass(frozen=True)
class ArgSpec:
    """One argument as a call site writes it: a tensor of a shape/dtype, or a Python value."""

    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    value: Any = None
    python: bool = False


def _literal_shape(node: ast.AST) -> tuple[int, ...] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        dims = [_int(e) for e in node.elts]
        return tuple(d for d in dims if d is not None) if all(d is not None and d >= 0 for d in dims) else None
    single = _int(node)
    return (single,) if single is not None and single >= 0 else None


def _nested(node: ast.AST) -> tuple[tuple[int, ...], str] | None:
    """Shape and element kind of a nested list literal."""
    if isinstance(node, (ast.List, ast.Tuple)):
        inner = [_nested(e) for e in node.elts]
        if not inner or any(i is None for i in inner) or len({i[0] for i in inner}) != 1:  # type: ignore[index]
            return None
        kinds = {i[1] for i in inner}  # type: ignore[index]
        return (len(inner), *inner[0][0]), ("float" if "float" in kinds else "int")  # type: ignore[index]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return (), "float" if isinstance(node.value, float) else "int"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _nested(node.operand)
    return None


def _dtype_keyword(call: ast.Call) -> str | None:
    node = _arg(call, 99, "dtype")
    if node is None:
        return None
    text = dotted(node) or (node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "")
    name = str(text).rsplit(".", 1)[-1]
    return name if name in ("float16", "float32", "float64", "int32", "int64", "bool", "bfloat16") else None


def arg_spec(node: ast.AST, bindings: dict[str, ast.AST], depth: int = 0) -> ArgSpec | None:
    """What a call-site argument is, when the source spells it out; ``None`` when unknown."""
    if depth > 3:
        return None
    if isinstance(node, ast.Name) and node.id in bindings:
        return arg_spec(bindings[node.id], bindings, depth + 1)
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return ArgSpec(value=node.value, python=True)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return ArgSpec(value=-node.operand.value, python=True)
    if not isinstance(node, ast.Call):
        return None
    last = dotted(node.func).rsplit(".", 1)[-1]
    dtype = _dtype_keyword(node)
    if last in ("Variable", "convert_to_tensor", "identity", "stop_gradient") and node.args:
        inner = arg_spec(node.args[0], bindings, depth + 1)
        return inner if inner is None or inner.python is False else ArgSpec((), dtype or "float32")
    if last in TENSOR_MAKERS:
        shape_node = _arg(node, 0, "shape", "size")
        if last in ("randn", "rand"):
            dims = [_int(a) for a in node.args]
            shape = tuple(d for d in dims if d is not None) if all(d is not None for d in dims) else None
        else:
            shape = _literal_shape(shape_node) if shape_node is not None else None
        if shape is not None:
            return ArgSpec(shape, dtype or "float32")
        return None
    if last in ("constant", "array", "asarray") and node.args:
        nested = _nested(node.args[0])
        if nested is not None:
            shape, kind = nested
            return ArgSpec(shape, dtype or ("float32" if kind == "float" else "int32"))
        return None
    if last in ("range", "arange") and dotted(node.func) != "range" and node.args:
        stop = _int(node.args[-1] if len(node.args) < 3 else node.args[1])
        start = _int(node.args[0]) if len(node.args) >= 2 else 0
        if stop is not None and start is not None and stop > start:
            return ArgSpec((stop - start,), dtype or "int32")
    return None


def _assignments(scope: ast.AST) -> dict[str, ast.AST]:
    found: dict[str, ast.AST] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, node.value)
    return found


def call_sites(tree: ast.Module, callee: str, n_params: int, lines: list[int] | None = None
               ) -> list[list[ArgSpec | None]]:
    """Argument specs at every call of ``callee`` (by its last name) with ``n_params`` positional arguments.
    ``lines``, when given, receives each result's line (the first call that gave it)."""
    results: list[list[ArgSpec | None]] = []
    scopes: list[ast.AST] = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                                                     ast.AsyncFunctionDef))]
    seen: set[int] = set()
    module_bindings = _assignments(tree)
    for scope in reversed(scopes):  # innermost first, so a call sees its own function's bindings
        bindings = {**module_bindings, **_assignments(scope)} if scope is not tree else module_bindings
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call) or id(node) in seen:
                continue
            if dotted(node.func).rsplit(".", 1)[-1] != callee or len(node.args) != n_params or node.keywords:
                continue
            if any(isinstance(a, ast.Starred) for a in node.args):
                continue
            seen.add(id(node))
            specs = [arg_spec(a, bindings) for a in node.args]
            if any(s is not None for s in specs) and specs not in results:
                results.append(specs)
                if lines is not None:
                    lines.append(node.lineno)
    return results
