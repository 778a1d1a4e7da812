"""Tree walks shared by every analysis: a node's syntax children, a body's own nodes, a statement's
subtree with parents. A ``NodeMemo`` keeps them per node object (bounded), so walks of unchanged
statements are not repeated.
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
    """Syntax children in field order, skipping whitespace and token nodes (``NodeMemo.children``
    keeps them per node).

    libcst's ``.children`` runs its visitor machinery for every node; reading the dataclass fields is
    several times faster and the analysis never needs whitespace. libcst nodes are ABCs, so
    ``isinstance(x, CSTNode)`` is slow: whether a type is a node is kept per type.
    """
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


# Entries hold their nodes, so ids stay unique while kept; the bound keeps memory small (~100k
# nodes is about ten 2,000-line files). Editors re-lint mostly unchanged statements, and the parse
# cache (cg_lint.prefilter.parse_cache) hands back the same node objects for them, so a memo that
# lives as long as the editor's process keeps its entries across files. Every edit makes new
# objects of the statements it touched: the walks of the old ones are forgotten once no file has
# walked them for IDLE_FILES files, so a long session keeps what its recent files use, not a
# history of edits (the count bound alone took some 10,000 edits of a one-line statement to fill).
CACHE_BOUND = 100_000
PIECES_BOUND = 2_000
IDLE_FILES = 32


class NodeMemo:
    """What the syntax layer computes per node object: children, a body's own nodes, a statement's
    subtree with parents, and (``pieces``, for ``cg_lint.syntax.positions``) a statement's
    generated code and ranges.

    Its owner decides how long it lives: one file's analysis, or a process that re-lints the same
    statements (``cg_lint.engine.Caches``). ``trim`` keeps it within its bounds; call it before each
    file.
    """

    def __init__(self, bound: int = CACHE_BOUND, pieces_bound: int = PIECES_BOUND,
                 idle: int = IDLE_FILES) -> None:
        self.bound, self.pieces_bound, self.idle = bound, pieces_bound, idle
        self.kids: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
        self.own: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
        self.subtrees: dict[int, tuple[cst.CSTNode, list[cst.CSTNode], dict[int, cst.CSTNode]]] = {}
        self.pieces: dict[tuple[int, str, str, str | None], tuple[cst.CSTNode, str, dict]] = {}
        self.files = 0  # how many times ``trim`` ran: one per file
        self._walked: dict[int, int] = {}  # statement id -> the file that last asked for its subtree
        self._per_file: list[int] = []  # ``own`` keys of modules: a module object is one file's

    def __len__(self) -> int:
        """Entries kept (for bounds and tests): walks of nodes and pieces."""
        return len(self.kids) + len(self.own) + len(self.subtrees) + len(self.pieces)

    def trim(self) -> None:
        """Forget the walks of statements no file used in the last ``idle`` files, and everything
        once the kept walks exceed the bound."""
        self.files += 1
        for key in self._per_file:
            self.own.pop(key, None)
        self._per_file.clear()
        oldest = self.files - self.idle
        stale = [key for key, used in self._walked.items() if used < oldest]
        if stale:
            self._forget(stale)
        if len(self.kids) + len(self.own) > self.bound:
            self.own.clear()
            self.kids.clear()
            self.subtrees.clear()
            self._walked.clear()
        if len(self.pieces) >= self.pieces_bound:
            self.pieces.clear()

    def _forget(self, stale: list[int]) -> None:
        gone: set[int] = set()
        kids, own = self.kids, self.own
        for key in stale:
            del self._walked[key]
            entry = self.subtrees.pop(key, None)
            if entry is None:
                continue
            for node in entry[1]:
                i = id(node)
                gone.add(i)
                hit = kids.get(i)
                if hit is not None and hit[0] is node:
                    del kids[i]
                hit = own.get(i)
                if hit is not None and hit[0] is node:
                    del own[i]
        if self.pieces:  # keyed by a statement or a class member: nodes of these subtrees
            for piece in [k for k in self.pieces if k[0] in gone]:
                del self.pieces[piece]

    def children(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        hit = self.kids.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        return children(node)

    def own_nodes(self, body: cst.CSTNode) -> list[cst.CSTNode]:
        """Every node of a function body, not descending into nested defs, lambdas or classes.

        Several analyses walk the same bodies (environments, returns, variable reads), so the list
        is kept per body. The entry holds the body itself, so its id cannot be reused while kept.
        """
        hit = self.own.get(id(body))
        if hit is not None and hit[0] is body:
            return hit[1]
        out: list[cst.CSTNode] = []
        kids_of = self.children
        stack = list(reversed(kids_of(body)))
        scopes = SCOPES
        while stack:
            node = stack.pop()
            out.append(node)
            if type(node) in scopes:
                continue
            stack.extend(reversed(kids_of(node)))
        self.own[id(body)] = (body, out)
        if type(body) is cst.Module:
            self._per_file.append(id(body))
        return out

    def subtree(self, stmt: cst.CSTNode) -> tuple[list[cst.CSTNode], dict[int, cst.CSTNode]]:
        """Every node under ``stmt`` (itself first) in source order, and the parent of each but
        ``stmt``; the children of each are kept on the way."""
        self._walked[id(stmt)] = self.files
        hit = self.subtrees.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1], hit[2]
        nodes: list[cst.CSTNode] = []
        parents: dict[int, cst.CSTNode] = {}
        kids_of = self.kids
        stack = [stmt]
        while stack:
            node = stack.pop()
            nodes.append(node)
            kids = children(node)
            kids_of[id(node)] = (node, kids)
            for child in kids:
                parents[id(child)] = node
            stack.extend(reversed(kids))
        self.subtrees[id(stmt)] = (stmt, nodes, parents)
        return nodes, parents

    def function_nodes(self, func: cst.FunctionDef | cst.Lambda) -> list[cst.CSTNode]:
        """The nodes of a def's body or a lambda's expression, not entering nested scopes."""
        if type(func) is cst.Lambda:
            if type(func.body) in SCOPES:
                return [func.body]
            return [func.body, *self.own_nodes(func.body)]
        return self.own_nodes(func.body)

    def walk(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node`` and everything under it, in source order (nested scopes included)."""
        out: list[cst.CSTNode] = []
        stack = [node]
        while stack:
            current = stack.pop()
            out.append(current)
            stack.extend(reversed(self.children(current)))
        return out


# parsed trees hold exactly these classes (libcst does not subclass them), so type() lookups are exact
SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})
