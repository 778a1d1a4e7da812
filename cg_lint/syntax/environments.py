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
