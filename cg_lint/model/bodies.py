"""The whole body of a custom gradient: its forward, its grads, and every function nested in them.

AutoGraph converts neither the forward nor grad of a custom gradient, nor anything they call: a
local helper, a lambda, a ``tf.cond`` branch or a ``tf.while_loop`` body runs on symbolic tensors
under ``tf.function`` exactly like the body around it (reproduced on TF 2.21 for each). So the
graph-mode rules read nested functions with the same rules. Two kinds are left out: functions
decorated with ``tf.function`` (AutoGraph converts those) and nested custom gradients (records of
their own).
"""

from __future__ import annotations

from dataclasses import dataclass
import libcst as cst

from cg_lint.model.records import CustomGradient, FuncNode

from cg_lint.syntax.index import FileIndex

# TF's higher-order ops: the functions passed to them are called with tensors
TENSOR_CALLBACK_OPS = frozenset({"while_loop", "map_fn", "vectorized_map", "scan", "foldl", "foldr",
                                 "while_loop_v2", "map_fn_v2"})
BRANCH_OPS = frozenset({"cond", "switch_case", "case", "cond_for_tf_v2"})
# ...and these convert their function with AutoGraph themselves (tf_convert with the current status),
# so under tf.function its Python control flow works: not part of the unconverted body
CONVERTING_OPS = frozenset({"map_fn", "map_fn_v2", "vectorized_map", "pfor"})
RECORD_NODES = ("record-nodes",)  # memo key: ids of every custom-gradient definition in the file


@dataclass(frozen=True)
class Body:
    """One function that runs as part of a custom gradient."""

    func: FuncNode
    who: str  # how messages name it
    top: FuncNode  # the forward or the grad it is written in
    in_grad: bool
    nested: bool


def is_tf_function(func: FuncNode, index: FileIndex) -> bool:
    """Decorated with ``tf.function`` (with or without arguments): AutoGraph converts it."""
    if type(func) is not cst.FunctionDef:
        return False
    for dec in func.decorators:
        expr = dec.decorator.func if type(dec.decorator) is cst.Call else dec.decorator
        if any(is_tf_function_name(n) for n in index.qualnames(expr)):
            return True
    return False


def is_tf_function_name(name: str) -> bool:
    return name.startswith("tensorflow.") and name.rsplit(".", 1)[-1] == "function"


def _describe(func: FuncNode) -> str:
    return f"nested function '{func.name.value}'" if type(func) is cst.FunctionDef else "a lambda"


def all_bodies(index: FileIndex, record: CustomGradient) -> list[Body]:
    """The forward, each grad, and the functions nested in them (memoised per file)."""
    key = ("all-bodies", id(record))
    cached = index.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    records = index.memo.get(RECORD_NODES, frozenset())
    out = [Body(record.node, f"'{record.name}'", record.node, False, False)]
    out += [Body(g.node, f"grad of '{record.name}'", g.node, True, False) for g in record.grads]
    seen = {id(b.func) for b in out}
    for top in list(out):
        stack: list[FuncNode] = [top.func]
        while stack:
            func = stack.pop()
            for node in index.walk.function_nodes(func):
                if type(node) is not cst.FunctionDef and type(node) is not cst.Lambda:
                    continue
                if id(node) in seen or id(node) in records or is_tf_function(node, index):  # type: ignore[operator]
                    continue
                if _converted_callback(index, node, func):
                    continue
                seen.add(id(node))
                out.append(Body(node, f"{top.who} (in {_describe(node)})", top.func, top.in_grad, True))
                stack.append(node)
    index.memo[key] = out
    return out


def _converted_callback(index: FileIndex, func: FuncNode, scope: FuncNode) -> bool:
    """Passed to tf.map_fn / tf.vectorized_map, directly or by name from ``scope``."""
    if callback_of(index, func) in CONVERTING_OPS:
        return True
    if type(func) is not cst.FunctionDef:
        return False
    name = func.name.value
    return any(type(node) is cst.Call and any(type(a.value) is cst.Name and a.value.value == name for a in node.args)
               and any(n.startswith("tensorflow.") and n.rsplit(".", 1)[-1] in CONVERTING_OPS
                       for n in index.qualnames(node.func))
               for node in index.walk.function_nodes(scope))


def callback_of(index: FileIndex, func: FuncNode) -> str | None:
    """The TF op a nested function is passed to directly (``tf.while_loop(cond, body, ...)``), if any."""
    parent = index.parent(func)
    if type(parent) is not cst.Arg:
        return None
    call = index.parent(parent)
    if type(call) is not cst.Call or call.func is func:
        return None
    for name in index.qualnames(call.func):
        if name.startswith(("tensorflow.", "keras.")):
            return name.rsplit(".", 1)[-1]
    return None
