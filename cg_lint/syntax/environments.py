"""What a function's local names hold: one ``Env`` per body, chained to the enclosing ones.

The file index resolves names through these environments, and the analyses read bound values from
them. Every binding we do not model is an ``Unknown`` marker, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import libcst as cst

from cg_lint.syntax.walk import NodeMemo


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
    parent: Env | None = None

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


def build_env(func: cst.FunctionDef | cst.Lambda | cst.Module, params: set[str], parent: Env | None,
              memo: NodeMemo) -> Env:
    env = Env(params=set(params), parent=parent)
    if type(func) is cst.Lambda:
        return env
    binders = _BINDERS
    body = func if type(func) is cst.Module else cast("cst.FunctionDef", func).body
    for node in memo.own_nodes(body):
        if type(node) in binders:  # most nodes bind nothing (a new branch below needs its class in _BINDERS)
            _bind_node(env, node)
    return env


def _bind_node(env: Env, node: cst.CSTNode) -> None:
    """What one binding statement or clause binds, into ``env``."""
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


def _aug_to_binop(op: cst.BaseAugOp) -> cst.BaseBinaryOp:
    mapping: dict[type, Callable[[], cst.BaseBinaryOp]] = {
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


# scopes and lazily run code: a use under one of these does not run where its statement stands
_DEFERRED = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.ListComp, cst.SetComp, cst.DictComp,
                       cst.GeneratorExp})
_LOOPS = frozenset({cst.For, cst.While})


def reaching_assign(use: cst.Name, func: cst.FunctionDef, memo: NodeMemo,
                    parent: Callable[[cst.CSTNode], cst.CSTNode | None]) -> cst.Assign | None:
    """The ``=`` statement whose binding of ``use``'s name reaches ``use`` in straight-line code.

    Sound only where order alone decides: ``use`` stands in ``func``'s own body (not in a nested
    def, lambda or comprehension), every binding of the name in ``func`` is a plain ``=`` statement
    of the very block that holds the use's statement, no loop encloses that block, and no
    ``global``/``nonlocal``/``del`` touches the name. Then the binding that reaches the use is the
    last one before the use's statement (a use in an assignment's value sees the bindings before
    that assignment). None when unsure, or when no assignment comes before the use.
    """
    name = use.value
    node: cst.CSTNode = use
    statement: cst.CSTNode | None = None
    block: cst.CSTNode | None = None
    while True:
        above = parent(node)
        if above is None or above is func or type(above) in _DEFERRED:
            return None
        if type(above) is cst.SimpleStatementLine or type(above) is cst.SimpleStatementSuite:
            statement, block = node, above if type(above) is cst.SimpleStatementSuite else parent(above)
            break
        if type(above) is cst.IndentedBlock:
            statement, block = node, above
            break
        node = above
    if block is None or not _straight_line_block(block, func, parent):
        return None
    order = {id(s): i for i, s in enumerate(_block_statements(block))}
    binders = [n for n in memo.own_nodes(func.body) if type(n) in _BINDERS and _binds(n, name)]
    if any(type(b) is not cst.Assign or id(b) not in order for b in binders):
        return None
    if _name_escapes(func, name, memo):
        return None
    at = order[id(statement)]
    if (type(statement) is cst.Assign and id(statement) in {id(b) for b in binders}
            and not _inside(use, statement.value, parent)):
        return None  # a use in a target sees the targets bound to its left: not modelled
    before = [b for b in binders if order[id(b)] < at]
    return cast("cst.Assign", before[-1]) if before else None


def _block_statements(block: cst.CSTNode) -> list[cst.CSTNode]:
    """The small statements of a block in order, compound statements as one each."""
    if type(block) is cst.SimpleStatementSuite:
        return list(block.body)
    out: list[cst.CSTNode] = []
    for stmt in cast("cst.IndentedBlock", block).body:
        if type(stmt) is cst.SimpleStatementLine:
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def _straight_line_block(block: cst.CSTNode, func: cst.FunctionDef,
                         parent: Callable[[cst.CSTNode], cst.CSTNode | None]) -> bool:
    """``block`` belongs to ``func`` itself and runs at most once per call (no loop around it)."""
    node: cst.CSTNode | None = parent(block)
    while node is not None and node is not func:
        if type(node) in _LOOPS or type(node) in _DEFERRED:
            return False
        node = parent(node)
    return node is func


def _binds(node: cst.CSTNode, name: str) -> bool:
    probe = Env()
    _bind_node(probe, node)
    return name in probe.bindings


def _name_escapes(func: cst.FunctionDef, name: str, memo: NodeMemo) -> bool:
    """A ``global``/``nonlocal`` (here or in a nested def), ``del`` or ``match`` capture of ``name``: order alone
    no longer says what it holds."""
    return any(name in _names_touched(node, memo) for node in memo.walk(func.body))


def _names_touched(node: cst.CSTNode, memo: NodeMemo) -> set[str]:
    if type(node) is cst.Global or type(node) is cst.Nonlocal:
        return {item.name.value for item in node.names}
    if type(node) is cst.Del:
        return {n.value for n in memo.walk(node.target) if type(n) is cst.Name}
    if (type(node) is cst.MatchAs or type(node) is cst.MatchStar) and node.name is not None:
        return {node.name.value}
    return set()


def _inside(node: cst.CSTNode, outer: cst.CSTNode, parent: Callable[[cst.CSTNode], cst.CSTNode | None]) -> bool:
    current: cst.CSTNode | None = node
    while current is not None:
        if current is outer:
            return True
        current = parent(current)
    return False
