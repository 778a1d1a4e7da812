"""What a function's local names hold, and how many gradient leaves an expression flattens to.

Deliberately small and conservative: every answer is "known" or ``None`` (unknown), and rules stay
silent on ``None``. TF flattens returned structures with ``nest.flatten``, so ``((dx,), [dy])`` is 2
leaves and ``None`` is one.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Set as AbstractSet
from dataclasses import dataclass, field

import libcst as cst

QualNames = Callable[[cst.CSTNode], AbstractSet[str]]

# Calls of TF that return several tensors, a structure, or a callable: never "one leaf".
_NON_LEAF_TF_CALLS = frozenset(
    {
        "split", "unstack", "meshgrid", "unique", "unique_with_counts", "moments",
        "weighted_moments", "eig", "eigh", "svd", "qr", "lu", "gradients", "gradient",
        "while_loop", "map_fn", "cond", "case", "switch_case", "py_function", "numpy_function",
        "py_func", "vectorized_map", "scan", "foldl", "foldr", "top_k", "dynamic_partition",
        "identity_n", "jacobian", "batch_jacobian", "shape_n", "broadcast_gradient_args",
        "function", "custom_gradient", "recompute_grad", "grad_pass_through", "Variable",
        "GradientTape", "name_scope", "device", "control_dependencies", "map_structure",
        "flatten", "pack_sequence_as", "nest", "tuple", "group", "partial", "make_decorator",
        "sufficient_statistics", "normalize_moments", "fused_batch_norm", "nce_loss",
        "ctc_greedy_decoder", "ctc_beam_search_decoder", "matrix_solve_ls", "tensor_list",
    }
)
_TENSOR_MODULE_PREFIXES = ("tensorflow.", "keras.ops.", "keras.src.ops.", "keras.src.backend.")


class Unknown:
    """A name bound by something we do not model (unpacking, loops, with, imports...)."""

    def __init__(self, origin: str) -> None:
        self.origin = origin


UNPACKED = Unknown("unpacked")
LOOP = Unknown("loop")
OTHER = Unknown("other")
IMPORTED = Unknown("import")


@dataclass
class Env:
    """Local bindings of one function body (nested functions and classes are their own scopes)."""

    params: set[str] = field(default_factory=set)
    bindings: dict[str, list] = field(default_factory=dict)
    parent: "Env | None" = None

    def bind(self, name: str, value) -> None:
        self.bindings.setdefault(name, []).append(value)

    def lookup(self, name: str) -> list | None:
        """The values bound to ``name`` in the nearest enclosing function that binds it."""
        env: Env | None = self
        while env is not None:
            if name in env.bindings:
                return env.bindings[name]
            if name in env.params:
                return []
            env = env.parent
        return None

    def is_param(self, name: str) -> bool:
        env: Env | None = self
        while env is not None:
            if name in env.bindings:
                return False
            if name in env.params:
                return True
            env = env.parent
        return False


_SKIP_FIELD = re.compile(r"^(whitespace|lpar$|rpar$|comma$|semicolon$|leading_lines$|lines_after|header$|footer$"
                         r"|trailing_whitespace$|equal$|colon$|star$|operator$|dot$|lbracket$|rbracket$|lbrace$"
                         r"|rbrace$|asynchronous$|first_line$|empty_lines$|arrow$|prefix$|quote$|value_start$)")
_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Syntax children in field order, skipping whitespace and token nodes.

    libcst's ``.children`` runs its visitor machinery for every node; reading the dataclass fields is
    several times faster and the analysis never needs whitespace. libcst nodes are ABCs, so
    ``isinstance(x, CSTNode)`` is slow: whether a type is a node is cached per type.
    """
    hit = _KIDS.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    names = _FIELDS.get(type(node))
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node) if not _SKIP_FIELD.match(f.name))
        _FIELDS[type(node)] = names
    out: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for v in value:
                flag = is_node.get(type(v))
                if flag is None:
                    flag = _remember(type(v))
                if flag:
                    out.append(v)
        else:
            flag = is_node.get(kind)
            if flag is None:
                flag = _remember(kind)
            if flag:
                out.append(value)
    return out


_IS_NODE: dict[type, bool] = {}


def _remember(kind: type) -> bool:
    _IS_NODE[kind] = flag = issubclass(kind, cst.CSTNode)
    return flag


def own_nodes(body: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node of a function body, not descending into nested defs, lambdas or classes.

    Several analyses walk the same bodies (environments, returns, variable reads), so the list is
    kept per body, within the bound ``clear_caches`` keeps. The entry holds the body itself, so its
    id cannot be reused while cached.
    """
    hit = _OWN.get(id(body))
    if hit is not None and hit[0] is body:
        return hit[1]
    out: list[cst.CSTNode] = []
    stack = list(reversed(children(body)))
    scopes = SCOPES
    while stack:
        node = stack.pop()
        out.append(node)
        if type(node) in scopes:
            continue
        stack.extend(reversed(children(node)))
    _OWN[id(body)] = (body, out)
    return out


_OWN: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
# children of every node of the file being analysed, filled once by its index (FileIndex._index)
_KIDS: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}


# per top-level statement: its nodes in source order and each one's parent (FileIndex._index)
_SUBTREES: dict[int, tuple[cst.CSTNode, list[cst.CSTNode], dict[int, cst.CSTNode]]] = {}


def subtree(stmt: cst.CSTNode) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]]:
    """Every node under ``stmt`` (itself first) in source order, and the parent of each but ``stmt``."""
    hit = _SUBTREES.get(id(stmt))
    if hit is not None and hit[0] is stmt:
        return hit[1], hit[2]
    nodes: list[cst.CSTNode] = []
    parents: dict[int, cst.CSTNode] = {}
    kids_of = _KIDS
    stack = [stmt]
    while stack:
        node = stack.pop()
        nodes.append(node)
        kids = children(node)
        kids_of[id(node)] = (node, kids)
        for child in kids:
            parents[id(child)] = node
        stack.extend(reversed(kids))
    _SUBTREES[id(stmt)] = (stmt, nodes, parents)
    return nodes, parents


# Entries hold their nodes, so ids stay unique while cached; the bound keeps memory small (~100k
# nodes is about ten 2,000-line files). Editors re-lint mostly unchanged statements, and a parse
# cache (cg_lint.parse_cache) hands back the same node objects for them, so entries are kept across
# files until the bound is reached.
CACHE_BOUND = 100_000


def clear_caches() -> None:
    """Forget the cached walks once they exceed the bound (called as each file's analysis starts)."""
    if len(_KIDS) + len(_OWN) > CACHE_BOUND:
        _OWN.clear()
        _KIDS.clear()
        _SUBTREES.clear()


def function_nodes(func: "cst.FunctionDef | cst.Lambda") -> list[cst.CSTNode]:
    """The nodes of a def's body or a lambda's expression, not entering nested scopes."""
    if type(func) is cst.Lambda:
        if type(func.body) in SCOPES:
            return [func.body]
        return [func.body, *own_nodes(func.body)]
    return own_nodes(func.body)


# parsed trees hold exactly these classes (libcst does not subclass them), so type() lookups are exact
SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})
_BINDERS = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.WithItem, cst.ExceptHandler,
    cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom,
})


def _bind_target(env: Env, target: cst.BaseExpression, value) -> None:
    if type(target) is cst.Name:
        env.bind(target.value, value)
    elif type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            inner = element.value
            _bind_target(env, inner, UNPACKED)
    elif type(target) is cst.StarredElement:
        _bind_target(env, target.value, UNPACKED)


def build_env(func: cst.FunctionDef | cst.Lambda | cst.Module, params: set[str], parent: Env | None) -> Env:
    env = Env(params=set(params), parent=parent)
    if type(func) is cst.Lambda:
        return env
    binders = _BINDERS
    for node in own_nodes(func if type(func) is cst.Module else func.body):
        if type(node) not in binders:  # most nodes bind nothing (a new branch below needs its class in _BINDERS)
            continue
        if type(node) is cst.Assign:
            for target in node.targets:
                _bind_target(env, target.target, node.value)
        elif type(node) is cst.AnnAssign and node.value is not None:
            _bind_target(env, node.target, node.value)
        elif type(node) is cst.AugAssign and type(node.target) is cst.Name:
            env.bind(node.target.value, cst.BinaryOperation(node.target, _aug_to_binop(node.operator), node.value))
        elif type(node) is cst.NamedExpr:
            _bind_target(env, node.target, node.value)
        elif type(node) in (cst.For,):
            _bind_target(env, node.target, LOOP)
        elif type(node) is cst.WithItem and node.asname is not None:
            _bind_target(env, node.asname.name, OTHER)
        elif type(node) is cst.ExceptHandler and node.name is not None:
            _bind_target(env, node.name.name, OTHER)
        elif type(node) in (cst.FunctionDef, cst.ClassDef):
            env.bind(node.name.value, node)
        elif type(node) in (cst.Import, cst.ImportFrom) and type(node.names) is not cst.ImportStar:
            for alias in node.names:
                if alias.asname is not None:
                    _bind_target(env, alias.asname.name, IMPORTED)
                else:
                    env.bind((cst.helpers.get_full_name_for_node(alias.name) or "").split(".")[0], IMPORTED)
    return env


def _aug_to_binop(op: cst.BaseAugOp) -> cst.BaseBinaryOp:
    mapping = {
        cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
        cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide,
        cst.ModuloAssign: cst.Modulo, cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    }
    return mapping.get(type(op), cst.Add)()


def literal_binding(expr: cst.BaseExpression | None, env: Env) -> cst.BaseExpression | None:
    """The literal tuple/list a name is bound to exactly once (``pair = (y, grad); return pair``)."""
    if type(expr) is cst.Name:
        values = env.lookup(expr.value) or []
        if len(values) == 1 and type(values[0]) in (cst.Tuple, cst.List):
            return values[0]
    return None


def call_name(node: cst.Call, qualnames: QualNames) -> str | None:
    """The resolved qualified name of a call's callee (one of them, if several)."""
    if type(node.func) is cst.Call:
        return None
    names = qualnames(node.func)
    if names:
        return sorted(names)[0]
    return cst.helpers.get_full_name_for_node(node.func)


def is_tf_name(name: str | None) -> bool:
    return bool(name) and name.startswith(_TENSOR_MODULE_PREFIXES)


def is_tensor_op_call(node: cst.BaseExpression, qualnames: QualNames) -> bool:
    """A call of a TF/Keras op that returns a single tensor."""
    if type(node) is not cst.Call:
        return False
    name = call_name(node, qualnames)
    if not is_tf_name(name):
        return False
    parts = name.split(".")
    return not any(part in _NON_LEAF_TF_CALLS for part in parts[1:]) and "nest" not in parts


class Counter:
    """Counts flattened leaves of expressions inside one function (with its enclosing envs)."""

    def __init__(self, env: Env, qualnames: QualNames, structured: set[str] = frozenset()) -> None:
        self.env = env
        self.qualnames = qualnames
        self.structured = structured
        self._active: set[str] = set()

    def count(self, expr: cst.BaseExpression | None, whole: bool = True) -> int | None:
        """Leaves of ``expr``; ``whole`` is False for an element of a literal tuple/list, where a
        bare name or call is assumed to be one tensor."""
        if expr is None:
            return 1
        if type(expr) in (cst.Tuple, cst.List):
            total = 0
            for element in expr.elements:
                if type(element) is cst.StarredElement:
                    c = self._sequence_len(element.value)
                else:
                    c = self.count(element.value, whole=False)
                if c is None:
                    return None
                total += c
            return total
        if type(expr) is cst.Dict:
            total = 0
            for element in expr.elements:
                if type(element) is cst.StarredDictElement:
                    return None
                c = self.count(element.value, whole=False)
                if c is None:
                    return None
                total += c
            return total
        if type(expr) is cst.Name:
            return self._count_name(expr.value, whole)
        if type(expr) is cst.BinaryOperation:
            if self._is_sequence(expr.left) or self._is_sequence(expr.right):
                return self._sequence_len(expr)
            return 1
        if type(expr) is cst.IfExp:
            a, b = self.count(expr.body, whole), self.count(expr.orelse, whole)
            return a if a == b else None
        if type(expr) in (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp):
            return None
        if type(expr) is cst.Call:
            callee = call_name(expr, self.qualnames)
            if callee in ("list", "tuple", "zip", "map", "sorted", "reversed", "filter", "dict"):
                return None
            if is_tensor_op_call(expr, self.qualnames):
                return 1
            return None if whole else 1
        if type(expr) in (cst.Subscript, cst.Attribute, cst.BooleanOperation, cst.Await):
            return None if whole else 1
        if isinstance(expr, (cst.UnaryOperation, cst.Comparison, cst.BaseNumber, cst.BaseString, cst.Lambda)):
            return 1
        return None if whole else 1

    def _count_name(self, name: str, whole: bool) -> int | None:
        if name == "None":
            return 1
        if name in self.structured:
            return None
        if name in self._active:
            return None
        values = self.env.lookup(name)
        if values is None:  # a global or closure we did not model
            return None if whole else 1
        if not values:  # a parameter
            return 1
        counts = set()
        self._active.add(name)
        try:
            for value in values:
                if isinstance(value, Unknown):
                    counts.add(None if whole else 1)
                elif type(value) in (cst.FunctionDef, cst.ClassDef):
                    counts.add(1)
                else:
                    counts.add(self.count(value, whole))
        finally:
            self._active.discard(name)
        return counts.pop() if len(counts) == 1 else None

    def _is_sequence(self, expr: cst.BaseExpression) -> bool:
        if type(expr) in (cst.List, cst.Tuple, cst.ListComp):
            return True
        if type(expr) is cst.Call and call_name(expr, self.qualnames) in ("list", "tuple"):
            return True
        if type(expr) is cst.BinaryOperation:
            return self._is_sequence(expr.left) or self._is_sequence(expr.right)
        if type(expr) is cst.Name and expr.value not in self._active:
            values = self.env.lookup(expr.value) or []
            self._active.add(expr.value)
            try:
                return any(not isinstance(v, (Unknown, cst.FunctionDef, cst.ClassDef)) and self._is_sequence(v) for v in values)
            finally:
                self._active.discard(expr.value)
        return False

    def _sequence_len(self, expr: cst.BaseExpression) -> int | None:
        """Length of a list/tuple-valued expression, if it is statically known."""
        if type(expr) in (cst.List, cst.Tuple):
            return self.count(expr, whole=True)
        if type(expr) is cst.BinaryOperation:
            if type(expr.operator) is cst.Add:
                a, b = self._sequence_len(expr.left), self._sequence_len(expr.right)
                return None if a is None or b is None else a + b
            if type(expr.operator) is cst.Multiply:
                for seq, times in ((expr.left, expr.right), (expr.right, expr.left)):
                    if type(times) is cst.Integer and self._is_sequence(seq):
                        n = self._sequence_len(seq)
                        return None if n is None else n * int(times.value, 0)
            return None
        if type(expr) is cst.Name:
            if expr.value in self._active:  # `grads = grads + [g]`: a length built at run time
                return None
            values = self.env.lookup(expr.value) or []
            self._active.add(expr.value)
            try:
                lens = {
                    self._sequence_len(v) if not isinstance(v, (Unknown, cst.FunctionDef, cst.ClassDef)) else None
                    for v in values
                }
            finally:
                self._active.discard(expr.value)
            return lens.pop() if len(lens) == 1 else None
        return None


def describe(expr: cst.BaseExpression) -> str:
    """Short source text of an expression, for messages."""
    try:
        text = cst.Module(body=[]).code_for_node(expr)
    except Exception:  # pragma: no cover - code generation does not fail on parsed nodes
        return "..."
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."
