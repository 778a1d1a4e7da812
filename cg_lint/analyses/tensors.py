"""Which expressions inside a custom gradient are tensors, and which are Python-static values.

A light, flow-insensitive dataflow over the forward and its grad functions. Under ``tf.function``
TensorFlow converts every positional input to a tensor before the forward runs, and grad receives
tensors as upstream gradients; results of TF ops, arithmetic, comparisons, subscripts and method
results of tensors are tensors too, and so are names bound only to such values.

Everything else is "not a tensor": shapes (``x.shape[0]``, ``x.shape.rank``), dtypes, ``len(x.shape)``,
``x is None``, ``isinstance``, literals, closure and module constants, ``tf.executing_eagerly()``.
Unknown means "not a tensor": the rules built on this stay quiet when in doubt.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from cg_lint.analyses.leaves import call_name
from cg_lint.model.bodies import RECORD_NODES, TENSOR_CALLBACK_OPS, all_bodies, callback_of
from cg_lint.model.records import CustomGradient, FuncNode
from cg_lint.syntax.environments import UNPACKED, Env, Unknown
from cg_lint.syntax.index import FileIndex
from cg_lint.syntax.walk import SCOPES

# Attributes of a tensor that are Python values, known while tracing.
STATIC_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "name", "device", "graph", "op", "value_index",
                               "is_sparse", "is_ragged", "ragged_rank", "dense_shape_static"})
# Tensor methods whose result is not a tensor (or that fail under tf.function).
STATIC_METHODS = frozenset({"numpy", "get_shape", "set_shape", "eval", "consumers", "ref", "experimental_ref",
                            "tolist", "item", "__len__", "__bool__", "__iter__", "__array__", "__index__",
                            "__int__", "__float__", "is_compatible_with", "with_rank"})

# TF calls that return Python values (or structures), whatever module they live in.
_STATIC_CALLS = frozenset({
    "executing_eagerly", "inside_function", "executing_eagerly_outside_functions", "get_static_value",
    "constant_value", "constant_value_as_shape", "is_tensor", "is_tf_type", "is_symbolic_tensor",
    "is_numeric_tensor", "is_sparse", "is_ragged", "TensorShape", "as_dtype", "as_shape", "dimension_value",
    "dimension_at_index", "shape_tensor_static", "get_positive_axis", "floatx", "epsilon", "image_data_format",
    "standardize_dtype", "result_type", "ndim", "dtype", "convert_to_numpy", "name_scope", "device",
    "control_dependencies", "Variable", "get_variable", "GradientTape", "function", "custom_gradient",
    "recompute_grad", "grad_pass_through", "TensorSpec", "no_op", "group", "print", "Print",
    "stop_recording", "numpy_function", "py_function", "py_func",
})
# Calls that return several tensors or a structure: their result is not one tensor.
_STRUCTURE_CALLS = frozenset({
    "split", "unstack", "meshgrid", "unique", "unique_with_counts", "moments", "weighted_moments", "eig",
    "eigh", "svd", "qr", "lu", "slogdet", "gradients", "gradient", "while_loop", "map_fn", "cond", "case",
    "switch_case", "vectorized_map", "scan", "foldl", "foldr", "top_k", "dynamic_partition", "identity_n",
    "jacobian", "batch_jacobian", "shape_n", "broadcast_gradient_args", "map_structure", "flatten",
    "pack_sequence_as", "tuple", "sufficient_statistics", "normalize_moments", "fused_batch_norm",
    "ctc_greedy_decoder", "ctc_beam_search_decoder", "frexp", "fractional_max_pool", "fractional_avg_pool",
    "max_pool_with_argmax", "unravel_index", "shape",  # keras.ops.shape is a tuple; tf.shape handled below
})
# Public TF namespaces whose lowercase functions are tensor ops.
_TF_OP_NAMESPACES = frozenset({"", "math", "linalg", "nn", "signal", "image", "random", "raw_ops", "bitwise",
                               "strings", "sparse", "ragged", "experimental.numpy", "dtypes"})
_KERAS_OPS_PREFIXES = ("keras.ops.", "keras.src.ops.", "tf_keras.ops.")
# tf.shape / array_ops.shape return a tensor (unlike keras.ops.shape)
_TF_SHAPE = frozenset({"tensorflow.shape", "tensorflow.compat.v1.shape", "tensorflow.compat.v2.shape",
                       "tensorflow.python.ops.array_ops.shape", "tensorflow.python.ops.array_ops.shape_v2"})
_TF_EXTRA_OPS = frozenset({"tensorflow.python.framework.ops.convert_to_tensor",
                           "tensorflow.python.framework.constant_op.constant"})


def is_tf_op(name: str | None) -> bool:
    """A call of a TensorFlow or Keras op that returns one tensor."""
    if not name:
        return False
    if name in _TF_SHAPE or name in _TF_EXTRA_OPS:
        return True
    parts = name.split(".")
    last = parts[-1]
    if not last[:1].islower() or last.startswith(("assert", "is_", "get_", "set_")):
        return False
    if last in _STATIC_CALLS or last in _STRUCTURE_CALLS:
        return False
    if name.startswith(_KERAS_OPS_PREFIXES):
        return True
    if parts[0] != "tensorflow":
        return False
    rest = parts[1:-1]
    if rest[:2] in (["compat", "v1"], ["compat", "v2"]):
        rest = rest[2:]
    if rest[:2] == ["python", "ops"]:
        # internal op modules: math_ops, array_ops, nn_ops, gen_*_ops, special_math_ops, ...
        module = rest[2] if len(rest) > 2 else ""
        return module.endswith("_ops") or module.startswith("nn") or module in ("special_math_ops",)
    return ".".join(rest) in _TF_OP_NAMESPACES


def _executes_eagerly(name: str | None) -> bool:
    return bool(name) and name.rsplit(".", 1)[-1] in ("executing_eagerly", "executing_eagerly_outside_functions")


def _eager_only_test(test: cst.BaseExpression, index: FileIndex) -> bool:
    """An ``if`` that separates eager from graph execution: both branches are deliberate."""
    for node in _walk(test, index):
        if type(node) is cst.Call and _executes_eagerly(call_name(node, index.qualnames)):
            return True
        if type(node) is cst.Name and node.value in ("EagerTensor",):
            return True
        if type(node) is cst.Attribute and node.attr.value == "EagerTensor":
            return True
        if (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "hasattr"
                and len(node.args) == 2 and type(node.args[1].value) is cst.SimpleString
                and node.args[1].value.raw_value == "numpy"):
            return True
    return False


_TOLERANT_HANDLERS = frozenset({"TypeError", "ValueError", "Exception", "BaseException", "NotImplementedError",
                                "AttributeError", "OperatorNotAllowedInGraphError"})


def _guarded_try(node: cst.Try) -> bool:
    """A ``try`` whose handlers catch what graph-mode misuse raises: the author planned for it."""
    for handler in node.handlers:
        if handler.type is None:
            return True
        types = handler.type.elements if type(handler.type) is cst.Tuple else [handler.type]
        for t in types:
            expr = t.value if type(t) is cst.Element else t
            name = cst.helpers.get_full_name_for_node(expr) or ""
            if name.rsplit(".", 1)[-1] in _TOLERANT_HANDLERS:
                return True
    return False


_SKIPPABLE = frozenset({cst.If, cst.IfExp, cst.Try})


def body_nodes(func: FuncNode, index: FileIndex) -> list[cst.CSTNode]:
    """The nodes of a forward or grad body that run when it is traced.

    Nested defs, lambdas and classes are not entered; branches that test ``executing_eagerly()`` and
    ``try`` blocks that catch ``TypeError`` and friends are skipped as deliberate. Several rules walk
    the same bodies, so the list is computed once per file.
    """
    key = ("body_nodes", id(func))
    cached = index.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    walk = index.walk
    own = walk.function_nodes(func)  # kept across analyses of unchanged code (cg_lint.syntax.walk)
    if not any(type(node) in _SKIPPABLE for node in own):  # nothing to skip: the same nodes
        index.memo[key] = own
        return own
    out: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [func.body] if type(func) is cst.Lambda else list(reversed(walk.children(func.body)))
    scopes = SCOPES
    while stack:
        node = stack.pop()
        kind = type(node)  # exact types: libcst nodes are ABCs and isinstance is slow on them
        if (kind is cst.If or kind is cst.IfExp) and _eager_only_test(node.test, index):
            continue
        if kind is cst.Try and _guarded_try(node):  # type: ignore[arg-type]
            continue
        out.append(node)
        if kind in scopes:
            continue
        stack.extend(reversed(walk.children(node)))
    index.memo[key] = out
    return out


def _walk(node: cst.CSTNode, index: FileIndex) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(index.walk.children(current)))


def statement_of(index: FileIndex, node: cst.CSTNode) -> cst.CSTNode:
    """The statement holding ``node``: findings go on its first line, where ``# noqa`` works."""
    current: cst.CSTNode | None = node
    while current is not None:
        if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return current
        current = index.parent(current)
    return node


def bodies(record: CustomGradient, index: FileIndex | None = None) -> list[tuple[FuncNode, str]]:
    """The forward and each grad function, with how messages name them; given the index, also every
    function nested in them (``cg_lint.model.bodies``: AutoGraph converts none of these)."""
    if index is not None:
        return [(b.func, b.who) for b in all_bodies(index, record)]
    out: list[tuple[FuncNode, str]] = [(record.node, f"'{record.name}'")]
    for grad in record.grads:
        out.append((grad.node, f"grad of '{record.name}'"))
    return out


def _unpacked_upstreams(index: FileIndex, grad: FuncNode) -> set[str]:
    """Names a grad that takes ``*args`` binds by unpacking them: ``(dy,) = args``, ``da, db = args``."""
    if type(grad) is not cst.FunctionDef or type(grad.params.star_arg) is not cst.Param:
        return set()
    star = grad.params.star_arg.name.value
    names: set[str] = set()
    for node in index.walk.own_nodes(grad.body):
        if type(node) is not cst.Assign or type(node.value) is not cst.Name or node.value.value != star:
            continue
        for target in node.targets:
            if type(target.target) in (cst.Tuple, cst.List):
                names.update(e.value.value for e in target.target.elements
                             if type(e) is cst.Element and type(e.value) is cst.Name)
    return names


def tensor_inputs(record: CustomGradient) -> set[str]:
    """Positional inputs that are tensors under tf.function.

    Required ones always are. One with a default only when a call in the file passes it
    positionally (left out, it keeps its Python default); inputs used as sequences are not.
    """
    names = set()
    positional = record.signature.positional
    passed = max((len(s.positional) for s in record.call_sites if not s.has_star), default=0)
    for i, p in enumerate(positional):
        if not p.has_default or i < passed:
            names.add(p.name)
    return names - record.structured_params


# ops that return a tuple or namedtuple of tensors, besides _STRUCTURE_CALLS: iterating them is fine
_TUPLE_OPS = _STRUCTURE_CALLS | frozenset({
    "combined_non_max_suppression", "non_max_suppression_padded", "non_max_suppression_with_scores",
    "approx_max_k", "approx_min_k", "ctc_unique_labels", "eigh_tridiagonal", "py_function", "numpy_function",
})


def return_values(index: FileIndex, func: cst.FunctionDef) -> list[cst.BaseExpression]:
    """The values a plain function returns; empty when one returns nothing or it is a generator."""
    out = []
    for node in index.walk.own_nodes(func.body):
        if type(node) in (cst.Yield,):
            return []
        if type(node) is cst.Return:
            if node.value is None:
                return []
            out.append(node.value)
    return out


def _positional(call: cst.Call, i: int) -> cst.BaseExpression | None:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[i].value if i < len(args) else None


def tensor_arguments(helper: cst.FunctionDef, call: cst.Call, tensors: Tensors, single: bool = False,
                     skip_first: bool = False) -> set[str]:
    """The helper's parameters that this call passes a tensor for (positionally or by keyword);
    ``single``: only a tensor that is certainly not a tuple of them (a loop variable may be one);
    ``skip_first``: a method called on ``self``, whose first parameter the call does not pass."""
    params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)][int(skip_first):]
    test = tensors.is_single_tensor if single else tensors.is_tensor
    found = set()
    for i, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
        if i < len(params) and test(arg.value):
            found.add(params[i])
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in params and test(arg.value):
            found.add(arg.keyword.value)
    return found


def _is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.BaseNumber, cst.BaseString)):
        return True
    if type(expr) is cst.Name and expr.value in ("True", "False", "None"):
        return True
    return type(expr) is cst.UnaryOperation and isinstance(expr.expression, cst.BaseNumber)


class Tensors:
    """Answers "is this expression a tensor" inside one custom gradient's forward and grads.

    Functions nested in them are modelled too: a parameter of one is a tensor when TF calls it with
    tensors (a ``tf.while_loop`` body, a ``tf.map_fn`` function) or when every call in the bodies
    passes a tensor in its place. A call of a plain function of the same file (a helper at module
    level) is a tensor when every ``return`` of the helper is one, given which arguments are
    tensors; helpers are followed one call deep.
    """

    def __init__(self, index: FileIndex, record: CustomGradient, exclude: set[str] = frozenset(), *,  # type: ignore[assignment]
                 roots: dict[int, set[str]] | None = None, depth: int = 0) -> None:
        self.ix = index
        self.record = record
        self.depth = depth
        # scopes whose names we model, with the names that are tensors on entry
        self.roots: dict[int, set[str]] = {}
        # env id -> names bound once by unpacking grad's `*args` (`(dy,) = args`): upstream tensors
        self._unpacked: dict[int, set[str]] = {}
        self._nested: dict[int, FuncNode] = {}  # env id -> nested function whose roots are not known yet
        if roots is not None:
            self.roots.update(roots)
        else:
            forward_env = index.env_for(record.node)
            self.roots[id(forward_env)] = tensor_inputs(record) - set(exclude)
            for grad in record.grads:
                genv = index.env_for(grad.node)
                self.roots.setdefault(id(genv), set()).update(p.name for p in grad.upstream)
                self._unpacked[id(genv)] = _unpacked_upstreams(index, grad.node)
            for body in all_bodies(index, record):
                if body.nested:
                    self._nested[id(index.env_for(body.func))] = body.func
        self._helpers: dict[tuple[int, frozenset[str]], bool] = {}
        self._memo: dict[int, bool] = {}
        self._active: set[int] = set()
        self._single_active: set[int] = set()
        self._order: dict[int, int] | None = None

    # -- public ---------------------------------------------------------------------------
    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        key = id(expr)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return False
        self._active.add(key)
        try:
            result = self._eval(expr)
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def is_single_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor that is certainly not a tuple of tensors: iterating it is iterating a tensor.

        TF ops may return namedtuples (``slogdet``, ``top_k``), so op results do not count here.
        """
        if type(expr) is cst.Name:
            found = self._resolve(expr)
            if found is None:
                return False
            env, values, is_root = found
            if values:
                return all(self._single_value(v) for v in values) and self.is_tensor(expr)
            return is_root
        if type(expr) in (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison):
            return self.is_tensor(expr)
        if type(expr) is cst.Subscript:
            return self.is_single_tensor(expr.value) and self.is_tensor(expr)
        if type(expr) is cst.Call and not (type(expr.func) is cst.Attribute and not self.ix.qualnames(expr.func)):
            # `tf.range(n)`, `tf.reshape(x, ...)`: ops that return one tensor (not a namedtuple)
            name = call_name(expr, self.ix.qualnames) or ""
            return name.rsplit(".", 1)[-1] not in _TUPLE_OPS and self.is_tensor(expr)
        return False

    def _single_value(self, value: object) -> bool:
        """One binding of a name, for ``is_single_tensor``. A binding already being evaluated
        (``x = x[1:]``) adds no fact, as in ``_name``: the other bindings and ``is_tensor`` decide."""
        if isinstance(value, (Unknown, cst.FunctionDef, cst.ClassDef)):
            return False
        key = id(value)
        if key in self._single_active:
            return True
        self._single_active.add(key)
        try:
            return self.is_single_tensor(value)  # type: ignore[arg-type]
        finally:
            self._single_active.discard(key)

    # -- evaluation -----------------------------------------------------------------------
    def _eval(self, expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Name:
            return self._name(expr)
        if type(expr) is cst.Call:
            return self._call(expr)
        if type(expr) is cst.BinaryOperation:
            if isinstance(expr.left, (cst.BaseString, cst.List, cst.Tuple, cst.ListComp)) or isinstance(
                    expr.right, (cst.List, cst.Tuple, cst.ListComp)):
                return False
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)
        if type(expr) is cst.UnaryOperation:
            return type(expr.operator) is not cst.Not and self.is_tensor(expr.expression)
        if type(expr) is cst.Comparison:
            operands = [expr.left] + [c.comparator for c in expr.comparisons]
            if any(type(c.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn) for c in expr.comparisons):
                return False
            if any(type(o) is cst.Name and o.value == "None" for o in operands):
                return False
            return any(self.is_tensor(o) for o in operands)
        if type(expr) is cst.Subscript:
            return self.is_tensor(expr.value)
        if type(expr) is cst.IfExp:
            return self.is_tensor(expr.body) and self.is_tensor(expr.orelse)
        if type(expr) is cst.NamedExpr:
            return self.is_tensor(expr.value)
        return False

    def _call(self, call: cst.Call) -> bool:
        func = call.func
        if type(func) is cst.Attribute and not self.ix.qualnames(func):
            # a method: tensors' methods return tensors, except the static ones
            method = func.attr.value
            if method in STATIC_METHODS or method.startswith("_"):
                return False
            return self.is_tensor(func.value)
        if type(func) is cst.Name:
            helper = self._helper(func)
            if helper is not None:
                return self._helper_result(helper, call)
        name = call_name(call, self.ix.qualnames)
        if name and name.rsplit(".", 1)[-1] in _STRUCTURE_CALLS and name not in _TF_SHAPE:
            return False
        return is_tf_op(name) and self._resolves_to_import(func)

    # -- helpers of the same file ---------------------------------------------------------
    def helper(self, name: cst.Name) -> cst.FunctionDef | None:
        return self._helper(name)

    def _helper(self, name: cst.Name) -> cst.FunctionDef | None:
        """The plain def a called name is bound to (one binding, not a custom gradient or a class)."""
        values = self.ix.lookup_function(name)
        if len(values) != 1 or type(values[0]) is not cst.FunctionDef:
            return None
        func = values[0]
        if id(func) in self.ix.memo.get(RECORD_NODES, frozenset()):  # type: ignore[operator]
            return None
        return func

    def _helper_result(self, helper: cst.FunctionDef, call: cst.Call) -> bool:
        returns = return_values(self.ix, helper)
        if not returns:
            return False
        env = self.ix.env_for(helper)
        if id(env) in self.roots or id(env) in self._nested:  # a function nested in the bodies
            return all(self.is_tensor(v) for v in returns)
        if self.depth > 0:
            return False  # one call deep
        tensor_params = frozenset(tensor_arguments(helper, call, self))
        key = (id(helper), tensor_params)
        found = self._helpers.get(key)
        if found is None:
            self._helpers[key] = False  # recursion through the helper adds no fact
            inner = Tensors(self.ix, self.record, roots={id(env): set(tensor_params)}, depth=self.depth + 1)
            found = self._helpers[key] = all(inner.is_tensor(v) for v in returns)
        return found

    # -- nested functions -----------------------------------------------------------------
    def _nested_roots(self, func: FuncNode) -> set[str]:
        """Parameters of a nested function that are tensors: all of them for a TF callback
        (``tf.while_loop`` body), else those every call in the bodies passes a tensor for."""
        params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        if not params:
            return set()
        calls: list[cst.Call] = []
        for body in all_bodies(self.ix, self.record):
            for node in self.ix.walk.function_nodes(body.func):
                if type(node) is not cst.Call:
                    continue
                if type(node.func) is cst.Name and func in self.ix.lookup_function(node.func):
                    calls.append(node)
                elif any(type(a.value) is cst.Name and a.value is not node.func
                         and func in self.ix.lookup_function(a.value) for a in node.args):
                    op = next((n.rsplit(".", 1)[-1] for n in self.ix.qualnames(node.func)
                               if n.startswith(("tensorflow.", "keras."))), None)
                    if op in TENSOR_CALLBACK_OPS:
                        return set(params)
                    return set()  # passed somewhere else: unknown arguments
        if callback_of(self.ix, func) in TENSOR_CALLBACK_OPS:
            return set(params)
        if not calls or any(any(a.star for a in c.args) for c in calls):
            return set()
        found = set()
        for i, name in enumerate(params):
            if all(_positional(c, i) is not None and self.is_tensor(_positional(c, i)) for c in calls):  # type: ignore[arg-type]
                found.add(name)
        return found

    def _resolves_to_import(self, func: cst.BaseExpression) -> bool:
        """``tf.math.log`` through an import; not a local function that shadows the name."""
        base = func
        while type(base) is cst.Attribute:
            base = base.value
        return type(base) is cst.Name and self._resolve(base) is None

    def _name(self, name: cst.Name) -> bool:
        if name.value in ("None", "True", "False"):
            return False
        found = self._resolve(name)
        if found is None:
            return False
        env, values, is_root = found
        if len(values) == 1 and values[0] is UNPACKED and name.value in self._unpacked.get(id(env), ()):
            return True  # `(dy,) = args` in a grad taking `*args`: one upstream gradient
        facts: list[bool] = []
        if is_root:
            facts.append(True)
        elif not values:
            return False  # a parameter that is not a tensor input (a default, `variables`, `*args`)
        for value in self._reaching(name, env, values):
            if isinstance(value, (Unknown, cst.FunctionDef, cst.ClassDef)):
                return False
            if id(value) in self._active:
                continue
            facts.append(self.is_tensor(value))
        return bool(facts) and all(facts)

    def _resolve(self, name: cst.Name) -> tuple[Env, list, bool] | None:
        """(env, bound values, is a tensor root) for a name in a modelled scope, else None."""
        if self._comprehension_binds(name):
            return None
        owner = self.ix.enclosing(name, (cst.FunctionDef, cst.Lambda))
        if owner is None:
            return None
        env: Env | None = self.ix.env_for(owner)
        while env is not None:
            if name.value in env.bindings or name.value in env.params:
                if id(env) not in self.roots and id(env) in self._nested:
                    func = self._nested.pop(id(env))
                    self.roots[id(env)] = set()  # while its roots are computed: no fact
                    self.roots[id(env)] = self._nested_roots(func)
                if id(env) not in self.roots:
                    return None  # a closure or module value: Python-static for our purposes
                values = env.bindings.get(name.value, [])
                return env, values, name.value in self.roots[id(env)]
            env = env.parent
        return None

    def _comprehension_binds(self, name: cst.Name) -> bool:
        node = self.ix.parent(name)
        while node is not None and type(node) not in (cst.FunctionDef, cst.Lambda, cst.Module):
            if type(node) in (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp):
                comp = node.for_in
                while comp is not None:
                    if any(type(n) is cst.Name and n.value == name.value for n in _walk(comp.target, self.ix)):
                        return True
                    comp = comp.inner_for_in
            node = self.ix.parent(node)
        return False

    def _reaching(self, use: cst.Name, env: Env, values: list) -> list:
        """Bindings that can reach ``use``: in the same function, those written before it."""
        owner = self.ix.enclosing(use, (cst.FunctionDef, cst.Lambda))
        if owner is None or self.ix.env_for(owner) is not env:
            return values
        order = self._positions()
        at = order.get(id(use), 0)
        return [v for v in values
                if isinstance(v, (Unknown, cst.FunctionDef, cst.ClassDef)) or order.get(id(v), 0) < at
                and not self._inside(use, v)]

    def _inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        current = self.ix.parent(node)
        while current is not None:
            if current is container:
                return True
            current = self.ix.parent(current)
        return False

    def _positions(self) -> dict[int, int]:
        if self._order is None:
            cached = getattr(self.ix, "_source_order", None)
            if cached is None:
                cached = {id(n): i for i, n in enumerate(self.ix.nodes)}
                self.ix._source_order = cached  # type: ignore[attr-defined]
            self._order = cached
        return self._order


# -- positional inputs used as Python values ---------------------------------------------------
# builtins that need a Python value: a number (range, int...) or a truth value (max/min compare)
_PYTHON_VALUE_CALLS = frozenset({"range", "int", "float", "bool", "complex", "max", "min"})


def python_value_uses(index: FileIndex, record: CustomGradient) -> dict[str, list[tuple[cst.CSTNode, str]]]:
    """Positional inputs used only as Python values (``if training:``, ``range(n)``).

    Maps each such input to its uses ``(node, how)``. An input also used as a tensor (in arithmetic,
    passed to an op, subscripted, returned) is left to the tensor rules.
    """
    inputs = tensor_inputs(record)
    if not inputs:
        return {}
    python: dict[str, list[tuple[cst.CSTNode, str]]] = {}
    tensor_use: set[str] = set()
    forward_env = index.env_for(record.node)
    for func, _ in bodies(record, index):
        for node in body_nodes(func, index):
            if type(node) is not cst.Name or node.value not in inputs:
                continue
            if not _is_forward_input(index, node, forward_env):
                continue
            how = _python_use(index, node)
            if how is None:
                if not _neutral_use(index, node):
                    tensor_use.add(node.value)
            elif how:
                python.setdefault(node.value, []).append((node, how))
    return {name: uses for name, uses in python.items() if name not in tensor_use}


def _is_forward_input(index: FileIndex, name: cst.Name, forward_env: Env) -> bool:
    owner = index.enclosing(name, (cst.FunctionDef, cst.Lambda))
    env: Env | None = index.env_for(owner) if owner is not None else None
    while env is not None:
        if name.value in env.bindings:
            return False  # rebound somewhere: not simply the input
        if name.value in env.params:
            return env is forward_env
        env = env.parent
    return False


def _truth_context(index: FileIndex, expr: cst.CSTNode) -> str | None:
    """How the truth value of ``expr`` is taken, if it is: 'if', 'while', 'not', ..."""
    parent = index.parent(expr)
    if type(parent) in (cst.If,) and parent.test is expr:
        return "if"
    if type(parent) is cst.While and parent.test is expr:
        return "while"
    if type(parent) is cst.IfExp and parent.test is expr:
        return "conditional expression"
    if type(parent) is cst.Assert and parent.test is expr:
        return "assert"
    if type(parent) is cst.CompIf:
        return "if"
    if type(parent) is cst.UnaryOperation and type(parent.operator) is cst.Not:
        return "not"
    if type(parent) is cst.BooleanOperation:
        return "and" if type(parent.operator) is cst.And else "or"
    if type(parent) is cst.Arg:
        call = index.parent(parent)
        if (type(call) is cst.Call and type(call.func) is cst.Name and call.func.value == "bool"
                and len(call.args) == 1):
            return "bool()"
    return None


def _operand_parent(index: FileIndex, name: cst.Name) -> cst.CSTNode | None:
    """The parent of a name, seen through libcst's ComparisonTarget wrapper."""
    parent = index.parent(name)
    if type(parent) is cst.ComparisonTarget:
        return index.parent(parent)
    return parent


def _python_use(index: FileIndex, name: cst.Name) -> str | None:
    """'' for a use that says nothing, a description for a Python-value use, None for a tensor use."""
    ctx = _truth_context(index, name)
    if ctx is not None:
        return f"'{ctx}'"
    parent = _operand_parent(index, name)
    if type(parent) is cst.Comparison:
        others = [parent.left] + [c.comparator for c in parent.comparisons]
        others = [o for o in others if o is not name]
        if any(type(c.operator) in (cst.Is, cst.IsNot) for c in parent.comparisons):
            return ""
        if all(_is_literal(o) for o in others) and _truth_context(index, parent) is not None:
            return f"'{_truth_context(index, parent)}'"
        return None
    if type(parent) is cst.Arg and parent.keyword is None:
        call = index.parent(parent)
        if type(call) is cst.Call and type(call.func) is cst.Name and call.func.value in _PYTHON_VALUE_CALLS:
            return f"{call.func.value}()"
    return None


def _neutral_use(index: FileIndex, name: cst.Name) -> bool:
    """Uses that neither make an input a tensor nor a Python value: keyword values, ``x is None``."""
    parent = _operand_parent(index, name)
    if type(parent) is cst.Arg and parent.keyword is not None:
        return True
    if type(parent) is cst.Comparison and any(
            type(c.operator) in (cst.Is, cst.IsNot) for c in parent.comparisons):
        return True
    if type(parent) is cst.Call and parent.func is name:
        return True
    return type(parent) in (cst.Param, cst.AssignTarget)
