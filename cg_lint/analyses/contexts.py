"""Where a custom gradient runs: only eagerly, or under ``tf.function`` (and inside its control flow).

The graph-mode rules describe failures that need ``tf.function``; they stay silent where graph
mode cannot happen. Each context was reproduced on TF 2.21 (``tests/test_examples_tf.py``):

- the function is called only through ``tf.py_function`` / ``tf.numpy_function`` / ``tf.py_func``
  (the wrapped function always runs eagerly, even inside ``tf.function``);
- the module calls ``tf.config.run_functions_eagerly(True)`` at module level (every
  ``tf.function`` then runs eagerly);
- the code is guarded by ``tf.executing_eagerly()``: the definition, or every call of the function,
  sits in ``if tf.executing_eagerly():``, or the body asserts it (``assert tf.executing_eagerly()``,
  ``if not tf.executing_eagerly(): raise ...``), so under ``tf.function`` the guard fails first.

The other direction is evidence for a finding: a call of the function inside a ``tf.function`` of
the same file (named in the messages), and a call inside ``tf.cond``/``tf.switch_case``/
``tf.while_loop`` under ``tf.function`` (where a variable read in grad fails, CG018).
"""

from __future__ import annotations

import libcst as cst

from cg_lint.model.records import CallSite, CustomGradient, FuncNode
from cg_lint.analyses.leaves import call_name
from cg_lint.model.bodies import is_tf_function, is_tf_function_name

from cg_lint.syntax.index import FileIndex

_EAGER_WRAPPERS = frozenset({"py_function", "numpy_function", "py_func", "eager_py_func"})
_EAGER_SWITCHES = frozenset({"run_functions_eagerly", "experimental_run_functions_eagerly"})
_CONTROL_FLOW = frozenset({"cond", "switch_case", "case", "while_loop"})
_EAGER_TESTS = frozenset({"executing_eagerly"})


class Context:
    """How one custom gradient can run, as far as this file tells; each answer is computed when
    first asked (most records need only ``eager_only``, and only when a rule has something to say)."""

    def __init__(self, index: FileIndex, record: CustomGradient) -> None:
        self._index, self._record = index, record
        self._eager: tuple[str | None] | None = None
        self._calls: tuple[CallSite | None, CallSite | None] | None = None
        self._converted: tuple[str | None] | None = None

    @property
    def eager_only(self) -> str | None:
        """Why graph mode cannot happen (for docs and tests); None: it can."""
        if self._eager is None:
            self._eager = (_eager_only(self._index, self._record),)
        return self._eager[0]

    @property
    def converted(self) -> str | None:
        """Why AutoGraph converts this definition's body (it is defined inside a function that a
        ``tf.function`` of this file converts); None: it runs as written."""
        if self._converted is None:
            self._converted = (_converted(self._index, self._record),)
        return self._converted[0]

    @property
    def traced_call(self) -> CallSite | None:
        """A call inside a tf.function of this file."""
        return self._traced()[0]

    @property
    def control_flow_call(self) -> CallSite | None:
        """Such a call inside tf.cond/tf.switch_case/tf.while_loop."""
        return self._traced()[1]

    def _traced(self) -> tuple[CallSite | None, CallSite | None]:
        if self._calls is None:
            traced = control = None
            for site in self._record.call_sites:
                under, in_flow = _call_context(self._index, site.node)
                if under and traced is None:
                    traced = site
                if under and in_flow and control is None:
                    control = site
            self._calls = (traced, control)
        return self._calls

    def traced_note(self, at: cst.CSTNode | None = None) -> str:
        """`` (it is called under tf.function at line N)`` when this file shows such a call
        (``at``: the call being reported, when it is one)."""
        traced = self.traced_call
        if traced is None:
            return ""
        if at is not None and traced.node is at:
            return " (this call runs under tf.function)"
        return f" (it is called under tf.function at line {traced.line})"


def context_of(index: FileIndex, record: CustomGradient) -> Context:
    key = ("context", id(record))
    found = index.memo.get(key)
    if found is None:
        found = index.memo[key] = Context(index, record)
    return found  # type: ignore[return-value]


def _eager_only(index: FileIndex, record: CustomGradient) -> str | None:
    if module_runs_functions_eagerly(index):
        return "the module calls tf.config.run_functions_eagerly(True)"
    if _guarded(index, record.node):
        return "it is defined under 'if tf.executing_eagerly():'"
    if asserts_eager(index, record.node):
        return "its forward requires tf.executing_eagerly()"
    refs = _references(index, record) if _local(index, record) else []
    if refs:
        if all(kind == "py_function" for kind in refs):
            return "it is called only through tf.py_function"
        if all(kind in ("py_function", "eager") for kind in refs):
            return "every call is guarded by tf.executing_eagerly()"
    return None


def _converted(index: FileIndex, record: CustomGradient) -> str | None:
    """A definition nested in a function AutoGraph converts is converted with it (grad included):
    a ``@tf.function`` def (not ``autograph=False``), a def this file hands to ``tf.function(...)``
    or ``Dataset.map``, or a plain function of this file that such a function calls. Keras
    ``call``/``train_step`` are never converted (tests/tf_behaviour: Keras is on AutoGraph's
    do-not-convert list), and neither is a factory called outside and only its result traced."""
    owner = index.enclosing(record.node, (cst.FunctionDef,))
    seen: set[int] = set()
    while owner is not None and id(owner) not in seen:
        seen.add(id(owner))
        why = _converting(index, owner, depth=0, seen=set())  # type: ignore[arg-type]
        if why is not None:
            return why
        owner = index.enclosing(owner, (cst.FunctionDef,))
    return None


def _converting(index: FileIndex, func: cst.FunctionDef, depth: int, seen: set[int]) -> str | None:
    if id(func) in seen or depth > 4:
        return None
    seen.add(id(func))
    if is_tf_function(func, index):
        if any(type(d.decorator) is cst.Call and _autograph_off(d.decorator) for d in func.decorators):
            return None
        return f"it is defined inside '{func.name.value}', which tf.function converts"
    name = func.name.value
    scope = index.enclosing(func, (cst.FunctionDef, cst.Lambda))
    for node in index.walk.walk(scope) if scope is not None else index.nodes:
        if type(node) is not cst.Name or node.value != name:
            continue
        parent = index.parent(node)
        if type(parent) is cst.Arg and _hands_to_autograph(index, parent):
            return f"it is defined inside '{name}', which this file hands to AutoGraph"
        if type(parent) is cst.Call and parent.func is node:
            caller = index.enclosing(parent, (cst.FunctionDef,))
            if type(caller) is cst.FunctionDef and _converting(index, caller, depth + 1, seen) is not None:
                return f"it is defined inside '{name}', which a converted function calls"
    return None


def _hands_to_autograph(index: FileIndex, arg: cst.Arg) -> bool:
    """The first argument of ``tf.function(f)`` (AutoGraph on) or of ``dataset.map(f)``."""
    call = index.parent(arg)
    if type(call) is not cst.Call or not call.args or call.args[0] is not arg:
        return False
    if type(call.func) is cst.Attribute and call.func.attr.value in ("map", "filter", "flat_map", "interleave"):
        return True
    return (_last(cst.helpers.get_full_name_for_node(call.func)) == "function"
            and any(is_tf_function_name(n) for n in index.qualnames(call.func)) and not _autograph_off(call))


def _autograph_off(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "autograph" and type(a.value) is cst.Name
               and a.value.value == "False" for a in call.args)


def module_runs_functions_eagerly(index: FileIndex) -> bool:
    """A module-level ``tf.config.run_functions_eagerly(True)`` (inside ``if`` blocks too)."""
    key = ("runs-eagerly",)
    found = index.memo.get(key)
    if found is None:
        found = False
        for node in index.nodes:
            if (type(node) is cst.Call and _last(cst.helpers.get_full_name_for_node(node.func)) in _EAGER_SWITCHES
                    # the spelling first: resolving names is not cheap
                    and _last(call_name(node, index.qualnames)) in _EAGER_SWITCHES
                    and node.args and type(node.args[0].value) is cst.Name and node.args[0].value.value == "True"
                    and index.enclosing(node, (cst.FunctionDef, cst.Lambda)) is None):
                found = True
                break
        index.memo[key] = found
    return bool(found)


def _last(name: str | None) -> str:
    return name.rsplit(".", 1)[-1] if name else ""


def _is_eager_test(index: FileIndex, test: cst.BaseExpression) -> int:
    """+1 for a test that is true only eagerly (``tf.executing_eagerly()``), -1 for its negation."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        return -_is_eager_test(index, test.expression)
    if type(test) is cst.Call and _last(call_name(test, index.qualnames)) in _EAGER_TESTS:
        return 1
    return 0


def _guarded(index: FileIndex, node: cst.CSTNode) -> bool:
    """Inside the body of ``if tf.executing_eagerly():`` (or the else of its negation)."""
    child, parent = node, index.parent(node)
    while parent is not None:
        if type(parent) is cst.If:
            sign = _is_eager_test(index, parent.test)
            if sign == 1 and child is parent.body or sign == -1 and child is parent.orelse:
                return True
        elif type(parent) is cst.Else:
            grand = index.parent(parent)
            if type(grand) is cst.If and _is_eager_test(index, grand.test) == -1:
                return True
        if type(parent) in (cst.FunctionDef, cst.Lambda) and asserts_eager(index, parent):  # type: ignore[arg-type]
            return True
        child, parent = parent, index.parent(parent)
    return False


def asserts_eager(index: FileIndex, func: FuncNode) -> bool:
    """The body, at its top level, asserts eager execution before anything else can fail:
    ``assert tf.executing_eagerly()`` or ``if not tf.executing_eagerly(): raise ...``."""
    if type(func) is not cst.FunctionDef or type(func.body) is not cst.IndentedBlock:
        return False
    key = ("asserts-eager", id(func))
    found = index.memo.get(key)
    if found is None:
        found = index.memo[key] = _asserts_eager(index, func)
    return bool(found)


def _asserts_eager(index: FileIndex, func: cst.FunctionDef) -> bool:
    for stmt in func.body.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) is cst.Assert and _is_eager_test(index, small.test) == 1:
                    return True
        elif type(stmt) is cst.If and _is_eager_test(index, stmt.test) == -1 and stmt.orelse is None:
            last = stmt.body.body[-1] if type(stmt.body) is cst.IndentedBlock and stmt.body.body else None
            if type(last) is cst.SimpleStatementLine and any(type(s) is cst.Raise for s in last.body):
                return True
    return False


def _local(index: FileIndex, record: CustomGradient) -> bool:
    """No other module can call it: nested in a function, or a private module-level name."""
    if record.kind in ("method", "staticmethod", "classmethod"):
        return False
    return index.enclosing(record.node, (cst.FunctionDef, cst.Lambda)) is not None or record.name.startswith("_")


def _references(index: FileIndex, record: CustomGradient) -> list[str]:
    """How the file uses the function's name: 'py_function', 'eager' (a call guarded by
    tf.executing_eagerly()), or 'other'."""
    bindings = {id(b) for b in record.binding_nodes}
    own = record.node.name if type(record.node) is cst.FunctionDef else None
    # a nested function's name is visible only inside the function around it
    scope = index.enclosing(record.node, (cst.FunctionDef, cst.Lambda))
    kinds = []
    for node in index.walk.walk(scope) if scope is not None else index.nodes:
        if type(node) is not cst.Name or node.value != record.name or node is own:
            continue
        parent = index.parent(node)
        if type(parent) is cst.Attribute and parent.attr is node:
            continue
        if type(parent) in (cst.AssignTarget, cst.Param) or type(parent) is cst.Decorator:
            continue
        if not any(id(v) in bindings for v in index.lookup_function(node)):
            continue
        if type(parent) is cst.Arg and _passed_to_eager_wrapper(index, parent):
            kinds.append("py_function")
        elif type(parent) is cst.Call and parent.func is node and _guarded(index, parent):
            kinds.append("eager")
        else:
            kinds.append("other")
    return kinds


def _passed_to_eager_wrapper(index: FileIndex, arg: cst.Arg) -> bool:
    call = index.parent(arg)
    if type(call) is not cst.Call or _last(call_name(call, index.qualnames)) not in _EAGER_WRAPPERS:
        return False
    first = next((a for a in call.args if a.keyword is None and not a.star), None)
    return arg is first or arg.keyword is not None and arg.keyword.value == "func"


def _call_context(index: FileIndex, call: cst.CSTNode) -> tuple[bool, bool]:
    """(inside a tf.function-decorated def, inside a tf.cond/switch_case/while_loop branch)."""
    in_flow = False
    parent = index.parent(call)
    while parent is not None:
        if type(parent) in (cst.Lambda, cst.FunctionDef) and _is_control_flow_branch(index, parent):  # type: ignore[arg-type]
            in_flow = True
        if type(parent) is cst.FunctionDef and is_tf_function(parent, index):
            return True, in_flow
        parent = index.parent(parent)
    return False, in_flow


def _is_control_flow_branch(index: FileIndex, func: FuncNode) -> bool:
    """A lambda or def passed to tf.cond / tf.switch_case / tf.while_loop."""
    if type(func) is cst.Lambda:
        node: cst.CSTNode | None = index.parent(func)
        while type(node) in (cst.Arg, cst.Element, cst.List, cst.Tuple, cst.DictElement, cst.Dict):
            node = index.parent(node)  # branch_fns=[...] or {0: fn, ...}
        return type(node) is cst.Call and _is_control_flow_call(index, node)
    owner = index.enclosing(func, (cst.FunctionDef, cst.Lambda))
    scope = owner.body if type(owner) is cst.FunctionDef else index.module
    return func.name.value in _branch_names(index, scope)  # type: ignore[union-attr]


def _is_control_flow_call(index: FileIndex, call: cst.Call) -> bool:
    # the spelling first: resolving the callee's name is the expensive part
    return (_last(cst.helpers.get_full_name_for_node(call.func)) in _CONTROL_FLOW
            and _last(call_name(call, index.qualnames)) in _CONTROL_FLOW
            and any(n.startswith(("tensorflow.", "keras.")) for n in index.qualnames(call.func)))


def _branch_names(index: FileIndex, scope: cst.CSTNode) -> set[str]:
    """Names passed to tf.cond / tf.switch_case / tf.while_loop in one scope (memoised per file)."""
    key = ("branch-names", id(scope))
    found = index.memo.get(key)
    if found is None:
        found = index.memo[key] = {
            n.value for node in index.walk.own_nodes(scope)
            if type(node) is cst.Call and _is_control_flow_call(index, node)
            for a in node.args for n in _flat(a.value) if type(n) is cst.Name}
    return found  # type: ignore[return-value]


def _flat(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if type(expr) in (cst.List, cst.Tuple):
        return [e.value for e in expr.elements]
    if type(expr) is cst.Dict:
        return [e.value for e in expr.elements if type(e) is cst.DictElement]
    return [expr]
