"""How many gradient leaves an expression flattens to, and which calls are single-tensor TF ops.

Deliberately small and conservative: every answer is "known" or ``None`` (unknown), and rules stay
silent on ``None``. TF flattens returned structures with ``nest.flatten``, so ``((dx,), [dy])`` is 2
leaves and ``None`` is one.
"""

from __future__ import annotations

from collections.abc import Callable, Set as AbstractSet
from typing import cast

import libcst as cst

from cg_lint.syntax.environments import Env, Unknown

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

    def __init__(self, env: Env, qualnames: QualNames, structured: AbstractSet[str] = frozenset(),
                 helpers: Callable[[cst.FunctionDef], tuple[Env, list[cst.BaseExpression]] | None] | None = None,
                 flat_params: bool = False) -> None:
        self.env = env
        # the parameters are ones TF fills with flat tensors (a grad's upstreams, *dys, variables)
        self.flat_params = flat_params
        self.qualnames = qualnames
        self.structured = structured
        # a plain function of the file: its environment and returned values, to count through a call
        self.helpers = helpers
        self._active: set[str] = set()

    def count(self, expr: cst.BaseExpression | None, whole: bool = True) -> int | None:
        """Leaves of ``expr``; ``whole`` is False for an element of a literal tuple/list, where a
        bare name or call is assumed to be one tensor."""
        if expr is None:
            return 1
        kind = type(expr)
        if kind is cst.Tuple or kind is cst.List or kind is cst.Dict:
            return self._count_literal(cast("cst.Tuple | cst.List | cst.Dict", expr))
        if kind is cst.Name:
            return self._count_name(expr.value, whole)
        if kind is cst.BinaryOperation:
            if self._is_sequence(expr.left) or self._is_sequence(expr.right):
                return self._sequence_len(expr)
            return 1
        if kind is cst.IfExp:
            a, b = self.count(expr.body, whole), self.count(expr.orelse, whole)
            return a if a == b else None
        if kind is cst.GeneratorExp:
            return 1  # a generator object is one value to nest.flatten, however much it would yield
        if kind in (cst.ListComp, cst.SetComp, cst.DictComp):
            return None
        if kind is cst.Subscript and self.flat_params and self._item_of_parameter(cast(cst.Subscript, expr)):
            return 1
        if kind is cst.Call:
            counted = self._count_call(cast(cst.Call, expr), whole)
            if counted is not False:
                return counted  # type: ignore[return-value]
        elif isinstance(expr, (cst.UnaryOperation, cst.Comparison, cst.BaseNumber, cst.BaseString, cst.Lambda)):
            return 1
        # a subscript, attribute, boolean operation, await or other call: one tensor inside a literal
        return None if whole else 1

    def _item_of_parameter(self, expr: cst.Subscript) -> bool:
        """``dys[0]``: one item, by an integer index, of a parameter of a grad (``*dys``, an upstream,
        ``variables``): one tensor, as the parameters TF fills are flat."""
        if type(expr.value) is not cst.Name or len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
            return False
        index = expr.slice[0].slice.value
        if type(index) is cst.UnaryOperation and type(index.operator) is cst.Minus:
            index = index.expression
        name = expr.value.value
        return type(index) is cst.Integer and name not in self.structured and self.env.lookup(name) == []

    def _count_call(self, call: cst.Call, whole: bool) -> int | None | bool:
        """A call's leaves; False when nothing here knows (the caller's default applies)."""
        callee = call_name(call, self.qualnames)
        if callee in ("list", "tuple", "zip", "map", "sorted", "reversed", "filter", "dict"):
            return None
        pieces = _split_count(call, callee)
        if pieces is None:
            pieces = self._namedtuple_fields(call)
        if pieces is not None:
            return pieces
        if is_tensor_op_call(call, self.qualnames):
            return 1
        through = self._through_helper(call, whole)
        return through if through is not None else False

    def _namedtuple_fields(self, call: cst.Call) -> int | None:
        """``Pair(a, b)`` where ``Pair = collections.namedtuple("Pair", ["lo", "hi"])`` (or a
        ``typing.NamedTuple`` class of this file): TF flattens it into one output per field."""
        if type(call.func) is not cst.Name:
            return None
        values = self.env.lookup(call.func.value) or []
        if len(values) != 1:
            return None
        value = values[0]
        if type(value) is cst.Call and (call_name(value, self.qualnames) or "").endswith("namedtuple"):
            fields = value.args[1].value if len(value.args) > 1 else None
            if type(fields) in (cst.List, cst.Tuple):
                return len(fields.elements)  # type: ignore[union-attr]
            if type(fields) is cst.SimpleString:
                return len(str(fields.evaluated_value).replace(",", " ").split())
            return None
        if type(value) is cst.ClassDef and any(
                (cst.helpers.get_full_name_for_node(b.value) or "").endswith("NamedTuple") for b in value.bases):
            body = value.body.body if type(value.body) is cst.IndentedBlock else []
            return sum(1 for stmt in body if type(stmt) is cst.SimpleStatementLine
                       for small in stmt.body if type(small) is cst.AnnAssign) or None
        return None

    def _through_helper(self, call: cst.Call, whole: bool) -> int | None:
        """The count every return of a plain function of this file gives (``return dy * x, dy``),
        when they agree; None when the callee is not such a function or its returns differ."""
        if self.helpers is None or type(call.func) is not cst.Name or call.func.value in self._active:
            return None
        values = self.env.lookup(call.func.value) or []
        if len(values) != 1 or type(values[0]) is not cst.FunctionDef:
            return None
        found = self.helpers(values[0])
        if found is None or not found[1]:
            return None
        env, returns = found
        inner = Counter(env, self.qualnames, helpers=self.helpers)
        inner._active = self._active | {call.func.value}
        counts = {inner.count(r, whole) for r in returns}
        return counts.pop() if len(counts) == 1 else None

    def _count_literal(self, expr: cst.Tuple | cst.List | cst.Dict) -> int | None:
        """The sum over a literal's elements (a ``*starred`` one counts what it unpacks)."""
        total = 0
        for element in expr.elements:
            if type(element) is cst.StarredDictElement:
                return None
            if type(element) is cst.StarredElement:
                c = self._sequence_len(element.value)
            else:
                c = self.count(element.value, whole=False)
            if c is None:
                return None
            total += c
        return total

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
                return any(not isinstance(v, (Unknown, cst.FunctionDef, cst.ClassDef)) and self._is_sequence(v)
                           for v in values)
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


def _split_count(call: cst.Call, callee: str | None) -> int | None:
    """How many tensors ``tf.split(x, 2)`` / ``tf.split(x, [1, 2])`` / ``tf.unstack(x, num=3)``
    return (a list TF flattens into that many outputs), when the call spells it."""
    last = (callee or "").rsplit(".", 1)[-1]
    if not (callee or "").startswith("tensorflow.") or last not in ("split", "unstack"):
        return None
    keyword = "num_or_size_splits" if last == "split" else "num"
    position = 1  # tf.split(value, num_or_size_splits); tf.unstack's num is a keyword in practice
    value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if value is None and len(positional) > position:
        value = positional[position].value
    if type(value) is cst.Integer:
        return int(value.value, 0)
    if type(value) in (cst.List, cst.Tuple) and last == "split":
        elements = value.elements  # type: ignore[union-attr]
        return None if any(type(e) is cst.StarredElement for e in elements) else len(elements)
    return None
