"""The file index: every node of one parsed file, its parent, what each name means, and positions.

The syntax layer's answer to "where am I and what does this name refer to", shared by the model
builder, the analyses and the rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import libcst as cst

from cg_lint.prefilter.prepared import Prepared
from cg_lint.syntax.environments import IMPORTED, Env, build_env, reaching_assign
from cg_lint.syntax.names import absolute_name, is_custom_gradient_name, module_name_for
from cg_lint.syntax.positions import LazyRanges
from cg_lint.syntax.reexports import module_reexports_tensorflow
from cg_lint.syntax.walk import NodeMemo


class FileIndex:
    """Name resolution, parents and positions for one parsed file, shared by the builder and rules.

    libcst's scope and qualified-name providers cost ~0.6 s per 1,500 lines; an import table and the
    function environments the builder needs anyway answer the same questions for a fraction of that.
    Positions are computed on first use, so a file with nothing to report never pays for them.
    """

    def __init__(self, prepared: Prepared, path: str | None = None, decorators: frozenset[str] = frozenset(),
                 walk: NodeMemo | None = None) -> None:
        """``path`` names the module (relative imports resolve against it); ``decorators`` are the
        configured names that stand for ``custom_gradient``; ``walk`` keeps the walks of nodes
        (a long-lived one reuses those of unchanged statements, see ``cg_lint.engine.Caches``).
        ``prepared.layout`` says where each top-level statement of the parsed text starts, so
        positions are computed per statement; without it the first position regenerates the whole
        module."""
        module = prepared.module
        self.module = module
        self.walk = walk if walk is not None else NodeMemo()
        self.module_name = module_name_for(path)
        self.path = path
        self.read_other_modules = False  # set when a verdict came from another file (never cached)
        self.is_package = bool(path) and path.endswith("__init__.py")
        self.extra_names = decorators
        self.parents: dict[int, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []
        layout, pieces = prepared.layout, self.walk.pieces
        if layout is None:
            self._positions = LazyRanges(module, None, None, None, pieces)
            self._line_map: list[int] | None = None
        else:
            self._positions = LazyRanges(module, layout.statement_starts, layout.source_lines, layout.member_starts,
                                         pieces)
            self._line_map = layout.line_map  # parsed line -> the file's line (empty lines were not parsed)
        self._shifts = prepared.column_shifts  # columns the form-feed normalisation removed, per parsed line
        self._spellings: set[str] | None = None
        self._importable_names: set[str] | None = None
        self._aliases: dict[tuple[str, ...], set[str]] = {}
        self.memo: dict[object, object] = {}  # per-file results several analyses and rules share (LintContext.cache)
        self._qualnames: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}
        self._owners: dict[int, tuple[cst.CSTNode, cst.CSTNode | None]] = {}
        self._index()
        self.module_env = build_env(module, set(), None, self.walk)
        self.envs: dict[int, Env] = {}
        # function id -> {name: qualified name} for imports inside that function (module: 0)
        self.imports: dict[int, dict[str, str]] = {}
        for node in self.nodes:
            if type(node) is cst.Import or type(node) is cst.ImportFrom:
                owner = self.enclosing(node, (cst.FunctionDef, cst.Lambda))
                table = self.imports.setdefault(id(owner) if owner else 0, {})
                # `try: import tensorflow as tf / except ImportError: import tf_fallback as tf`:
                # the fallback stands in for what the try body imported, which the module means
                self._add_import(node, table, keep=self._import_fallback(node))

    def _index(self) -> None:
        """Every syntax node in source order, and each one's parent."""
        module = self.module
        self.nodes.append(module)
        for stmt in self.walk.children(module):  # the body: header and footer are whitespace
            self.parents[id(stmt)] = module
            nodes, parents = self.walk.subtree(stmt)
            self.nodes.extend(nodes)
            self.parents.update(parents)

    def _import_fallback(self, node: cst.CSTNode) -> bool:
        """``node`` sits in an ``except`` clause (of ImportError, or any) of a ``try``."""
        handler = self.enclosing(node, (cst.ExceptHandler, cst.FunctionDef, cst.Lambda, cst.ClassDef))
        return type(handler) is cst.ExceptHandler

    def _add_import(self, node: cst.Import | cst.ImportFrom, table: dict[str, str], keep: bool = False) -> None:
        if keep:  # a fallback: add only names the try body did not bind
            fresh: dict[str, str] = {}
            self._add_import(node, fresh)
            for name, full in fresh.items():
                table.setdefault(name, full)
            return
        if type(node) is cst.Import:
            for alias in node.names:
                full = cst.helpers.get_full_name_for_node(alias.name) or ""
                if alias.asname is not None and type(alias.asname.name) is cst.Name:
                    table[alias.asname.name.value] = full
                else:
                    table[full.split(".")[0]] = full.split(".")[0]
            return
        base = "." * len(node.relative) + (cst.helpers.get_full_name_for_node(node.module) or "" if node.module else "")
        base = absolute_name(base, self.module_name, self.is_package) if base.startswith(".") else base
        if type(node.names) is cst.ImportStar:
            if base in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
                table["custom_gradient"] = f"{base}.custom_gradient"
            return
        for alias in node.names:
            name = cst.helpers.get_full_name_for_node(alias.name) or ""
            renamed = alias.asname is not None and type(alias.asname.name) is cst.Name
            bound = alias.asname.name.value if renamed else name
            table[bound] = f"{base}.{name}" if base else name

    # -- names -----------------------------------------------------------------------------
    def qualnames(self, node: cst.CSTNode) -> frozenset[str]:
        """What a name or dotted attribute refers to: ``tf.math.log`` -> {"tensorflow.math.log"}.

        Memoised per node: several rules resolve the same callees. The node is kept beside the
        answer, so a node built outside the tree and freed cannot lend its ``id`` to another."""
        hit = self._qualnames.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        names = self._qualnames_of(node)
        self._qualnames[id(node)] = (node, names)
        return names

    def _qualnames_of(self, node: cst.CSTNode) -> frozenset[str]:
        parts: list[str] = []
        while type(node) is cst.Attribute:
            parts.append(node.attr.value)
            node = node.value
        if type(node) is not cst.Name:
            return _NO_NAMES
        base = self._resolve_name(node)
        if base is None:
            return _NO_NAMES
        return frozenset((".".join([base, *reversed(parts)]),))

    def _resolve_name(self, name: cst.Name) -> str | None:
        ident = name.value
        if ident not in self._importable:
            # neither imported nor defined at module level: a builtin or a local value
            return None if self.enclosing_env_binds(name) else ident
        owner = self.enclosing(name, (cst.FunctionDef, cst.Lambda))
        while owner is not None:
            table = self.imports.get(id(owner))
            if table and ident in table:
                return table[ident]
            env = self.env_for(owner)
            if ident in env.params or ident in env.bindings:
                return None  # a local value, not something importable
            owner = self.enclosing(owner, (cst.FunctionDef, cst.Lambda))
        table = self.imports.get(0, {})
        # `except ImportError: tf = None` is a fallback, not what the module means by `tf`
        local = any(v is not IMPORTED and not _is_none(v) for v in self.module_env.bindings.get(ident, ()))
        if ident in table and not local:
            return table[ident]
        if local:
            return f"{self.module_name}.{ident}" if self.module_name else ident
        return ident  # a builtin, or a name we cannot see

    @property
    def _importable(self) -> set[str]:
        if self._importable_names is None:
            names = set(self.module_env.bindings)
            for table in self.imports.values():
                names.update(table)
            self._importable_names = names
        return self._importable_names

    def enclosing_env_binds(self, name: cst.Name) -> bool:
        owner = self.enclosing(name, (cst.FunctionDef, cst.Lambda))
        if owner is None:
            return False
        env = self.env_for(owner)
        return env.lookup(name.value) is not None

    def is_custom_gradient(self, expr: cst.BaseExpression) -> bool:
        # cheap textual test first: resolving a name may build the environments around it
        last = expr.attr.value if type(expr) is cst.Attribute else expr.value if type(expr) is cst.Name else None
        if last is None or (last not in self._cg_spellings and last != "custom_gradient"):
            return False
        names = self.qualnames(expr)
        if any(is_custom_gradient_name(n, self.extra_names) for n in names):
            return True
        return (type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "tf"
                and last == "custom_gradient" and any(self._tf_reexport(n) for n in names))

    def _tf_reexport(self, name: str) -> bool:
        """``tf.custom_gradient`` where ``tf`` is a module of a package that re-exports TensorFlow
        (``from lingvo import compat as tf``), read from the project or the import path."""
        module = name.rsplit(".", 1)[0]
        self.read_other_modules = True
        key = ("tf_reexport", module)
        if key not in self.memo:
            self.memo[key] = module_reexports_tensorflow(module, self._project_root())
        return bool(self.memo[key])

    def _project_root(self) -> Path | None:
        """The folder this file's top-level package sits in (its own folder for a plain module)."""
        if not self.path or not self.module_name:
            return None
        depth = len(self.module_name.split(".")) - (0 if self.is_package else 1)
        parents = Path(self.path).resolve().parents
        return parents[depth] if depth < len(parents) else None

    @property
    def _cg_spellings(self) -> set[str]:
        """Names that may stand for custom_gradient here: aliases bound by imports, extra names."""
        if self._spellings is None:
            self._spellings = {name.rsplit(".", 1)[-1] for name in self.extra_names}
            for table in self.imports.values():
                self._spellings.update(k for k, v in table.items()
                                       if is_custom_gradient_name(v, self.extra_names))
        return self._spellings

    def import_aliases(self, targets: tuple[str, ...]) -> set[str]:
        """Names some import binds to one of ``targets`` (``from functools import partial as p``)."""
        found = self._aliases.get(targets)
        if found is None:
            found = {k for table in self.imports.values() for k, v in table.items() if v in targets}
            self._aliases[targets] = found
        return found

    def env_for(self, func: cst.CSTNode | None) -> Env:
        """Local bindings of ``func``, chained to the enclosing functions and the module."""
        if func is None or type(func) is cst.Module:
            return self.module_env
        env = self.envs.get(id(func))
        if env is None:
            outer = self.enclosing(func, (cst.FunctionDef, cst.Lambda))
            function = cast("cst.FunctionDef | cst.Lambda", func)  # what owners are
            params = {p.name.value for p in _all_params(function)}
            env = build_env(function, params, self.env_for(outer), self.walk)
            self.envs[id(func)] = env
        return env

    def reaching_assign(self, use: cst.Name) -> cst.Assign | None:
        """The ``=`` statement whose binding reaches ``use`` when straight-line code of its own
        def says so (see ``environments.reaching_assign``); None when unsure."""
        owner = self.owner(use)
        if type(owner) is not cst.FunctionDef:
            return None
        return reaching_assign(use, owner, self.walk, self.parent)

    def lookup_function(self, name: cst.Name) -> list[cst.CSTNode]:
        """What a bare name refers to from where it stands (defs, lambdas, assigned values)."""
        owner = self.enclosing(name, (cst.FunctionDef, cst.Lambda))
        values = self.env_for(owner).lookup(name.value)
        return list(values or [])

    # -- tree ------------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        return self.parents.get(id(node))

    def enclosing(self, node: cst.CSTNode, kinds: tuple[type, ...]) -> cst.CSTNode | None:
        if kinds == _FUNCTIONS:
            return self.owner(node)
        parents, parent = self.parents, self.parents.get(id(node))
        if _leaf_kinds(kinds):  # type() lookups: ABC isinstance is slow, and no class derives from these
            while parent is not None and type(parent) not in kinds:
                parent = parents.get(id(parent))
            return parent
        while parent is not None and not isinstance(parent, kinds):
            parent = parents.get(id(parent))
        return parent

    def owner(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost def or lambda around ``node`` (None: module level); the question most
        lookups start with, so each answer is kept for every node on the way up."""
        owners, parents = self._owners, self.parents
        hit = owners.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        path = [node]
        parent = parents.get(id(node))
        while parent is not None and type(parent) is not cst.FunctionDef and type(parent) is not cst.Lambda:
            hit = owners.get(id(parent))
            if hit is not None and hit[0] is parent:
                parent = hit[1]
                break
            path.append(parent)
            parent = parents.get(id(parent))
        for below in path:
            owners[id(below)] = (below, parent)
        return parent

    # -- positions -------------------------------------------------------------------------
    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based line and column of a node's start."""
        rng = self._range(node)
        return (1, 1) if rng is None else (self._line(rng[0]), rng[1] + 1 + self._shifts.get(rng[0], 0))

    def end_position(self, node: cst.CSTNode) -> tuple[int, int]:
        rng = self._range(node)
        return (1, 1) if rng is None else (self._line(rng[2]), rng[3] + 1 + self._shifts.get(rng[2], 0))

    def _line(self, parsed: int) -> int:
        line_map = self._line_map
        if line_map is None:
            return parsed
        if parsed <= len(line_map):
            return line_map[parsed - 1]
        return line_map[-1] + parsed - len(line_map)  # the end of the last line

    def _range(self, node: cst.CSTNode) -> tuple[int, int, int, int] | None:
        """libcst's PositionProvider range of ``node`` (see cg_lint.syntax.positions)."""
        below: cst.CSTNode | None = None
        member: cst.CSTNode | None = None  # the statement of the outermost block holding node
        top, parent = node, self.parent(node)
        while parent is not None and parent is not self.module:
            below, top, parent = top, parent, self.parent(parent)
            if type(top) is cst.IndentedBlock:
                member = below
        if parent is not self.module:
            return self._positions.get(node, None)
        return self._positions.get(node, top, member if type(top) is cst.ClassDef else None)


_NO_NAMES: frozenset[str] = frozenset()
_FUNCTIONS = (cst.FunctionDef, cst.Lambda)
_LEAF_KINDS: dict[tuple[type, ...], bool] = {}


def _leaf_kinds(kinds: tuple[type, ...]) -> bool:
    leaf = _LEAF_KINDS.get(kinds)
    if leaf is None:
        leaf = _LEAF_KINDS[kinds] = all(not k.__subclasses__() for k in kinds)
    return leaf


def _all_params(func: cst.FunctionDef | cst.Lambda) -> list[cst.Param]:
    p = func.params
    out = [*p.posonly_params, *p.params, *p.kwonly_params]
    if type(p.star_arg) is cst.Param:
        out.append(p.star_arg)
    if p.star_kwarg is not None:
        out.append(p.star_kwarg)
    return out


def _is_none(value: object) -> bool:
    return type(value) is cst.Name and value.value == "None"  # type: ignore[attr-defined]
