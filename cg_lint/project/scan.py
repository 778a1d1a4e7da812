"""What one module tells about tracing, read with ``ast`` (cheap: only modules a search reaches).

For each function (``__qualname__``-style, as the model names custom gradients): whether it is a
trace root (``tf.function``, a Keras ``call``/``train_step``/..., passed to ``tf.data`` ``map``,
``strategy.run``, ``tf.cond``...), and, for any name, where the module refers to it: from which
function, at module level, under ``if __name__ == "__main__":``, or as the function of
``tf.py_function`` (which always runs eagerly).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# decorators and wrappers that trace (their last name, with the module spellings that make it TF's)
_TF_FUNCTION = frozenset({"function"})
_TF_HOMES = ("tf", "tensorflow", "def_function", "polymorphic_function")
# the callee's last name -> which positional arguments it traces (None: every argument)
_TRACERS: dict[str, tuple[int, ...] | None] = {
    "map": (0,), "filter": (0,), "flat_map": (0,), "interleave": (0,), "reduce": (1,), "scan": None,
    "run": (0,), "cond": (1, 2), "while_loop": (0, 1), "map_fn": (0,), "vectorized_map": (0,),
    "switch_case": None, "case": None, "foldl": (0,), "foldr": (0,), "Lambda": (0,),
    "recompute_grad": (0,), "to_graph": (0,),
}
# traced only as a method (`dataset.map`, `strategy.run`), never as a builtin
_METHOD_TRACERS = frozenset({"map", "filter", "flat_map", "interleave", "reduce", "run"})
_TRACER_KEYWORDS = frozenset({"fn", "true_fn", "false_fn", "body", "cond", "branch_fns", "map_func",
                              "predicate", "function", "loss"})
_EAGER_WRAPPERS = frozenset({"py_function", "numpy_function", "py_func", "eager_py_func"})
# Keras traces these methods of a layer or model (fit/evaluate/predict run them in a tf.function)
KERAS_TRACED_METHODS = frozenset({"call", "train_step", "test_step", "predict_step", "compute_loss"})
_KERAS_BASES = frozenset({"Layer", "Model", "Sequential", "Functional", "Wrapper", "RNN", "AbstractRNNCell",
                          "Loss", "Metric", "Constraint", "Regularizer"})


@dataclass
class Reference:
    """One place a module names something: ``owner`` is the enclosing function's qualname (None at
    module level); ``how`` is call | ref | traced | eager | main | toplevel."""

    owner: str | None
    how: str
    line: int


@dataclass
class CallShape:
    """How one call passes its positional arguments: how many, and whether any may flatten into
    several inputs (a tuple, list or dict, an attribute or subscript, a ``*splat``)."""

    line: int
    positional: int
    structured: bool


@dataclass
class FunctionInfo:
    qualname: str
    line: int
    root: str | None = None  # why it is traced by itself ("tf.function", "Keras Model.call", ...)
    class_name: str | None = None


@dataclass
class ModuleScan:
    path: str
    text: str = field(repr=False)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    # name -> where it is referenced (a bare name, or the attribute of anything)
    references: dict[str, list[Reference]] = field(default_factory=dict)
    # class name -> the names of its bases, as written (last component)
    bases: dict[str, list[str]] = field(default_factory=dict)
    calls: dict[str, list[CallShape]] = field(default_factory=dict)  # callee's last name -> its calls
    runs_eagerly: bool = False  # tf.config.run_functions_eagerly(True) at module level
    # classes whose own methods call it (their __init__, say): their methods run after it did
    eager_classes: set[str] = field(default_factory=set)
    has_main: bool = False  # `if __name__ == "__main__":`: a script

    def function(self, qualname: str) -> FunctionInfo | None:
        return self.functions.get(qualname)


def scan_module(path: str, text: str) -> ModuleScan:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ModuleScan(path, text)
    scan = ModuleScan(path, text)
    _Scanner(scan).visit(tree)
    _mark_keras_methods(scan)
    return scan


def last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None


def _dotted(expr: ast.expr) -> str:
    if isinstance(expr, ast.Call):
        expr = expr.func
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
    return ".".join(reversed(parts))


def is_tf_function(decorator: ast.expr) -> bool:
    dotted = _dotted(decorator)
    head, _, last = dotted.rpartition(".")
    return last in _TF_FUNCTION and (not head or head.split(".")[0] in _TF_HOMES or head.endswith(_TF_HOMES))


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


class _Scanner(ast.NodeVisitor):
    def __init__(self, scan: ModuleScan) -> None:
        self.scan = scan
        self.stack: list[str] = []  # qualname parts
        self.owners: list[str | None] = [None]  # the enclosing function's qualname
        self.classes: list[str | None] = [None]
        self.main = 0  # depth inside `if __name__ == "__main__":`
        self.handled: set[int] = set()  # names already recorded as handed to a wrapper
        self.method_class: str | None = None  # the class of the method being read

    # -- definitions ---------------------------------------------------------------------------
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        qualname = ".".join([*self.stack, node.name])
        info = FunctionInfo(qualname, node.lineno, class_name=self.classes[-1])
        if any(is_tf_function(d) for d in node.decorator_list):
            info.root = "tf.function"
        self.scan.functions[qualname] = info
        outer_class = self.method_class
        if self.classes[-1] is not None:
            self.method_class = self.classes[-1]
        self.stack += [node.name, "<locals>"]
        self.owners.append(qualname)
        self.classes.append(None)
        for child in (*node.args.defaults, *node.args.kw_defaults):
            if child is not None:
                self.visit(child)
        for stmt in node.body:
            self.visit(stmt)
        self.stack = self.stack[:-2]
        self.owners.pop()
        self.classes.pop()
        self.method_class = outer_class

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.visit(expr)
        self.scan.bases[node.name] = [n for n in (last_name(b) for b in node.bases) if n]
        self.stack.append(node.name)
        self.classes.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()
        self.classes.pop()

    def visit_If(self, node: ast.If) -> None:
        main = _is_main_guard(node.test)
        self.scan.has_main = self.scan.has_main or main
        self.visit(node.test)
        self.main += main
        for stmt in node.body:
            self.visit(stmt)
        self.main -= main
        for stmt in node.orelse:
            self.visit(stmt)

    # -- references ----------------------------------------------------------------------------
    def _where(self) -> str:
        if self.owners[-1] is not None:
            return "call"
        return "main" if self.main else "toplevel"

    def _add(self, name: str, how: str, line: int) -> None:
        self.scan.references.setdefault(name, []).append(Reference(self.owners[-1], how, line))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self.handled:
            self._add(node.id, self._where(), node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self.handled:
            self._add(node.attr, self._where(), node.lineno)
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        callee: str | None = last_name(node.func)
        if callee is not None:
            structured = any(isinstance(a, (ast.Starred, ast.Tuple, ast.List, ast.Dict, ast.Attribute, ast.Subscript,
                                            ast.ListComp, ast.DictComp)) for a in node.args)
            self.scan.calls.setdefault(callee, []).append(CallShape(node.lineno, len(node.args), structured))
        if callee in _METHOD_TRACERS and not isinstance(node.func, ast.Attribute):
            callee = None  # the builtins map/filter, functools' reduce: not tf.data
        if callee in _EAGER_WRAPPERS or callee in _TRACERS or callee in _TF_FUNCTION or callee == "compile":
            self._wrapped_args(node, callee)
        elif (callee in ("run_functions_eagerly", "experimental_run_functions_eagerly")
              and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value is True):
            if self.owners[-1] is None:
                self.scan.runs_eagerly = True
            elif self.method_class is not None:
                self.scan.eager_classes.add(self.method_class)
        self.generic_visit(node)

    def _wrapped_args(self, node: ast.Call, callee: str) -> None:
        """Functions handed to a tracer become roots; to tf.py_function, eager edges."""
        positions: tuple[int, ...] | None
        keywords: frozenset[str]
        if callee in _EAGER_WRAPPERS:
            how, positions = "eager", (0,)
            keywords = frozenset({"func", "f"})
        elif callee in _TF_FUNCTION:
            if not is_tf_function(node):
                return
            how, positions, keywords = "traced", (0,), frozenset({"func", "python_function"})
        elif callee == "compile":
            how, positions, keywords = "traced", (), frozenset({"loss", "metrics"})
        else:
            how, positions, keywords = "traced", _TRACERS[callee], _TRACER_KEYWORDS
        chosen = [a for i, a in enumerate(node.args) if positions is None or i in positions]
        chosen += [k.value for k in node.keywords if k.arg in keywords]
        for arg in chosen:
            for leaf in _leaves(arg):
                # a call: the factory whose result is traced (its nested definitions run traced)
                name = last_name(leaf) if isinstance(leaf, (ast.Name, ast.Attribute, ast.Call)) else None
                if name is not None:
                    self._add(name, how, getattr(leaf, "lineno", node.lineno))
                    self.handled.add(id(leaf.func if isinstance(leaf, ast.Call) else leaf))


def _leaves(arg: ast.expr) -> list[ast.expr]:
    if isinstance(arg, (ast.List, ast.Tuple)):
        return [x for e in arg.elts for x in _leaves(e)]
    if isinstance(arg, ast.Dict):
        return [x for v in arg.values for x in _leaves(v)]
    if isinstance(arg, ast.Lambda):
        return [arg.body] if isinstance(arg.body, ast.Call) else []
    if isinstance(arg, ast.Call) and last_name(arg.func) == "partial":
        return arg.args[:1]
    return [arg]


def keras_like(bases: dict[str, list[str]], name: str, seen: frozenset[str] = frozenset()) -> bool:
    """A class whose bases (followed within the module) include a Keras layer, model, loss..."""
    for base in bases.get(name, ()):
        if base in _KERAS_BASES or base not in seen and base in bases and keras_like(bases, base, seen | {name}):
            return True
    return False


def _mark_keras_methods(scan: ModuleScan) -> None:
    for info in scan.functions.values():
        if info.root is None and info.class_name is not None and "<locals>" not in info.qualname:
            method = info.qualname.rsplit(".", 1)[-1]
            if method in KERAS_TRACED_METHODS and keras_like(scan.bases, info.class_name):
                info.root = f"Keras {info.class_name}.{method}"
