"""Tree walks shared by every analysis: a node's syntax children, a body's own nodes, a statement's
subtree with parents. Kept per node object (bounded), so walks of unchanged statements are not
repeated (see ``clear_caches``).
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

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
