"""Build the model of a file: find every custom-gradient definition and describe it once."""

from __future__ import annotations


import libcst as cst

from cg_lint.model import (
    CallSite,
    CustomGradient,
    ForwardReturn,
    FuncNode,
    GradFn,
    Param,
    ReturnSite,
    Signature,
)
from cg_lint.names import absolute_name, is_custom_gradient_name
from cg_lint.positions import LazyRanges
from cg_lint.values import IMPORTED, Env, build_env, children, clear_caches, subtree, function_nodes, own_nodes
from cg_lint.variables import VariableFinder

_PARTIAL = ("functools.partial", "partial")
_SEQUENCE_CALLS = frozenset({"len", "zip", "enumerate", "list", "tuple", "map", "sorted", "reversed", "iter"})


class FileIndex:
    """Name resolution, parents and positions for one parsed file, shared by the builder and rules.

    libcst's scope and qualified-name providers cost ~0.6 s per 1,500 lines; an import table and the
    function environments the builder needs anyway answer the same questions for a fraction of that.
    Positions are computed on first use, so a file with nothing to report never pays for them.
    """

    def __init__(self, module: cst.Module, module_name: str | None, is_package: bool,
                 extra_names: frozenset[str], statement_starts: list[int] | None = None,
                 source_lines: list[str] | None = None, member_starts: dict[int, list[int]] | None = None,
                 line_map: list[int] | None = None, column_shifts: dict[int, int] | None = None) -> None:
        """``statement_starts`` (first line of each top-level statement, from the ``ast``) and
        ``source_lines`` (the parsed text, split with line endings) let positions be computed per
        statement (``member_starts``: per member of top-level classes, keyed by the class's first
        line); without them the first position regenerates the whole module."""
        clear_caches()  # bounded: node lists of earlier analyses are kept while they fit
        self.module = module
        self.module_name = module_name
        self.is_package = is_package
        self.extra_names = extra_names
        self.parents: dict[int, cst.CSTNode] = {}
        self.nodes: list[cst.CSTNode] = []
        self._positions = LazyRanges(module, statement_starts, source_lines, member_starts)
        self._line_map = line_map  # parsed line -> the file's line (empty lines were not parsed)
        # parsed line -> characters removed from its start before parsing (cg_lint.form_feeds)
        self._shifts = column_shifts or {}
        self._spellings: set[str] | None = None
        self._importable_names: set[str] | None = None
        self._aliases: dict[tuple[str, ...], set[str]] = {}
        self.memo: dict[object, object] = {}  # per-file results several analyses and rules share (LintContext.cache)
        self._qualnames: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}
        self._owners: dict[int, tuple[cst.CSTNode, cst.CSTNode | None]] = {}
        self._index()
        self.module_env = build_env(module, set(), None)
        self.envs: dict[int, Env] = {}
        # function id -> {name: qualified name} for imports inside that function (module: 0)
        self.imports: dict[int, dict[str, str]] = {}
        for node in self.nodes:
            if type(node) is cst.Import or type(node) is cst.ImportFrom:
                owner = self.enclosing(node, (cst.FunctionDef, cst.Lambda))
                self._add_import(node, self.imports.setdefault(id(owner) if owner else 0, {}))

    def _index(self) -> None:
        """Every syntax node in source order, and each one's parent."""
        module = self.module
        self.nodes.append(module)
        for stmt in children(module):  # the body: header and footer are whitespace
            self.parents[id(stmt)] = module
            nodes, parents = subtree(stmt)
            self.nodes.extend(nodes)
            self.parents.update(parents)

    def _add_import(self, node: cst.Import | cst.ImportFrom, table: dict[str, str]) -> None:
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
            bound = alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name else name
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
        local = any(v is not IMPORTED for v in self.module_env.bindings.get(ident, ()))
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
        return any(is_custom_gradient_name(n, self.extra_names) for n in self.qualnames(expr))

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
            params = {p.name.value for p in _all_params(func)}
            env = build_env(func, params, self.env_for(outer))
            self.envs[id(func)] = env
        return env

    def lookup_function(self, name: cst.Name) -> list[cst.CSTNode]:
        """What a bare name refers to from where it stands (defs, lambdas, assigned values)."""
        owner = self.enclosing(name, (cst.FunctionDef, cst.Lambda))
        values = self.env_for(owner).lookup(name.value)
        return list(values or [])

    # -- tree ------------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
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
        """libcst's PositionProvider range of ``node`` (see cg_lint.positions)."""
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


def _signature(func: FuncNode, drop_first: bool) -> Signature:
    params = func.params
    positional = [Param(p.name.value, p, p.default is not None) for p in (*params.posonly_params, *params.params)]
    if drop_first and positional:
        positional = positional[1:]
    star = params.star_arg
    varargs = Param(star.name.value, star, False) if type(star) is cst.Param else None
    kwonly = [Param(p.name.value, p, p.default is not None) for p in params.kwonly_params]
    kwargs = Param(params.star_kwarg.name.value, params.star_kwarg, False) if params.star_kwarg else None
    return Signature(positional, varargs, kwonly, kwargs)


def _decorator_names(func: cst.FunctionDef) -> set[str]:
    names = set()
    for d in func.decorators:
        expr = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
        full = cst.helpers.get_full_name_for_node(expr)
        if full:
            names.add(full.split(".")[-1])
    return names


class ModelBuilder:
    def __init__(self, index: FileIndex) -> None:
        self.ix = index
        self.by_node: dict[int, CustomGradient] = {}
        self.locate = index.position

    # -- discovery -------------------------------------------------------------------------
    def build(self) -> list[CustomGradient]:
        calls: list[cst.Call] = []
        order: dict[int, int] = {}  # where each def and lambda (what a record can be) stands
        for i, node in enumerate(self.ix.nodes):
            kind = type(node)  # exact classes in parsed trees; ABC isinstance is slow
            if kind is cst.FunctionDef:
                order[id(node)] = i
                if any(self._is_cg_decorator(d) for d in node.decorators):
                    self._add(node, [node])
            elif kind is cst.Call:
                calls.append(node)
                self._maybe_call_form(node)
            elif kind is cst.Lambda:
                order[id(node)] = i
        records = sorted(self.by_node.values(), key=lambda r: order.get(id(r.node), 0))
        for record in records:
            self._describe(record)
        self._call_sites(records, calls)
        self._variables(records)
        return records

    def _variables(self, records: list[CustomGradient]) -> None:
        """The one place that decides which variables each forward and grad reads."""
        forward_finder = VariableFinder(self.ix, trainable_only=True)
        grad_finder = VariableFinder(self.ix, trainable_only=False)
        for record in records:
            record.variable_reads = forward_finder.reads(record.node, record)
            for grad in record.grads:
                grad.variable_reads = grad_finder.reads(grad.node, record, created_ok=False)

    def _is_cg_decorator(self, dec: cst.Decorator) -> bool:
        expr = dec.decorator
        if type(expr) is cst.Call:
            # `@tf.custom_gradient()` returns the decorator; anything with arguments is another API
            if expr.args:
                return False
            expr = expr.func
        return self.ix.is_custom_gradient(expr)

    def _maybe_call_form(self, call: cst.Call) -> None:
        if type(call.func) not in (cst.Name, cst.Attribute) or not self.ix.is_custom_gradient(call.func):
            return
        positional = [a for a in call.args if a.keyword is None and not a.star]
        keyword = {a.keyword.value: a for a in call.args if a.keyword is not None}
        if set(keyword) - {"f"} or len(positional) > 1 or (positional and keyword):
            return  # not TF's signature (e.g. TFP's vjp_fwd=/vjp_bwd=)
        arg = positional[0].value if positional else keyword["f"].value if keyword else None
        if arg is None:
            return
        # an env maps `g` to this Call in `g = tf.custom_gradient(f)`: calls of g resolve through it
        binding: list[cst.CSTNode] = [call]
        parent = self.ix.parent(call)
        bound_to = None
        if type(parent) is cst.Assign and len(parent.targets) == 1:
            bound_to = _binding_name([parent.targets[0].target])
        if type(arg) is cst.Lambda:
            self._add(arg, binding, kind="lambda", anchor_name=bound_to)
            return
        target = self._resolve_function(arg)
        if target is not None:
            existing = self.by_node.get(id(target))
            if existing is not None:
                existing.binding_nodes.extend(binding)
            else:
                self._add(target, [target, *binding] if type(arg) is cst.Name else binding,
                          kind=None, anchor_name=bound_to)

    def _resolve_function(self, expr: cst.BaseExpression) -> cst.FunctionDef | None:
        """A local def that ``expr`` (a name, or ``self.name``) refers to."""
        if type(expr) is cst.Name:
            defs = [v for v in self.ix.lookup_function(expr) if type(v) is cst.FunctionDef]
            return defs[-1] if defs else None
        if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value in ("self", "cls"):
            cls = self.ix.enclosing(expr, (cst.ClassDef,))
            if type(cls) is cst.ClassDef:
                return _method(cls, expr.attr.value)
        return None

    def _add(self, func: FuncNode, binding: list[cst.CSTNode], kind: str | None = None,
             anchor_name: str | None = None) -> None:
        if id(func) in self.by_node:
            return
        cls = None
        if type(func) is cst.FunctionDef:
            parent = self.ix.parent(func)
            grand = self.ix.parent(parent) if parent is not None else None
            decos = _decorator_names(func)
            if type(grand) is cst.ClassDef:
                cls = grand
                kind = "staticmethod" if "staticmethod" in decos else "classmethod" if "classmethod" in decos else "method"
            elif kind is None:
                kind = "nested" if self.ix.enclosing(func, (cst.FunctionDef, cst.Lambda)) else "function"
            elif kind == "function" and self.ix.enclosing(func, (cst.FunctionDef,)):
                kind = "nested"
            name = func.name.value
            anchor: cst.CSTNode = func.name
        else:
            name = anchor_name or "<lambda>"
            anchor = func
            kind = kind or "lambda"
        drop_first = kind in ("method", "classmethod")
        record = CustomGradient(
            anchor=anchor,
            locate=self.locate,
            name=anchor_name if (anchor_name and kind != "lambda") else name,
            qualname=self._qualname(func, name if type(func) is cst.FunctionDef else "<lambda>"),
            kind=kind,
            node=func,
            signature=_signature(func, drop_first),
            class_node=cls,
            binding_nodes=list(binding),
        )
        if type(func) is cst.FunctionDef and anchor_name and anchor_name != func.name.value:
            record.name = anchor_name
        self.by_node[id(func)] = record

    def _qualname(self, func: FuncNode, name: str) -> str:
        parts = [name]
        node = self.ix.parent(func)
        while node is not None:
            if type(node) is cst.ClassDef:
                parts.append(node.name.value)
            elif type(node) is cst.FunctionDef:
                parts.extend(["<locals>", node.name.value])
            elif type(node) is cst.Lambda:
                parts.extend(["<locals>", "<lambda>"])
            node = self.ix.parent(node)
        return ".".join(reversed(parts))

    # -- description -----------------------------------------------------------------------
    def env_for(self, func: FuncNode) -> Env:
        return self.ix.env_for(func)

    def _returns(self, func: FuncNode) -> list[ReturnSite]:
        if type(func) is cst.Lambda:
            return [ReturnSite(anchor=func.body, locate=self.locate, value=func.body)]
        return [ReturnSite(anchor=node, locate=self.locate, value=node.value)
                for node in own_nodes(func.body) if type(node) is cst.Return]

    def _describe(self, record: CustomGradient) -> None:
        env = self.env_for(record.node)
        seen: dict[int, GradFn] = {}
        for site in self._returns(record.node):
            value = site.value
            elements = None
            if type(value) in (cst.Tuple, cst.List) and not any(type(e) is cst.StarredElement for e in value.elements):
                elements = [e.value for e in value.elements]
            fr = ForwardReturn(site=site, elements=elements)
            if elements is not None and len(elements) == 2:
                fr.outputs, fr.grad_expr = elements
                fr.grad = self._grad_fn(fr.grad_expr, env, record, seen)
            record.returns.append(fr)
        record.grads = list(seen.values())
        record.structured_params = self._structured(record)

    def _grad_fn(self, expr: cst.BaseExpression, env: Env, record: CustomGradient,
                 seen: dict[int, GradFn]) -> GradFn | None:
        node: FuncNode | None = None
        bound = False
        if type(expr) is cst.Lambda:
            node = expr
        elif type(expr) is cst.Name:
            values = env.lookup(expr.value)
            if values:
                funcs = [v for v in values if type(v) in (cst.FunctionDef, cst.Lambda)]
                if len(funcs) == len(values):
                    node = funcs[-1]
            elif values is None:
                node = self._resolve_function(expr)  # a module-level def
        elif type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value in ("self", "cls"):
            if record.class_node is not None:
                node = _method(record.class_node, expr.attr.value)
                bound = node is not None and "staticmethod" not in _decorator_names(node)
        if node is None:
            return None
        if id(node) in seen:
            return seen[id(node)]
        if type(node) is cst.FunctionDef:
            name, anchor = node.name.value, node.name
            is_cg = any(self._is_cg_decorator(d) for d in node.decorators)
        else:
            name, anchor, is_cg = "<lambda>", node, False
        grad = GradFn(anchor=anchor, locate=self.locate, node=node, name=name,
                      signature=_signature(node, bound), returns=self._returns(node),
                      bound_method=bound, is_custom_gradient=is_cg)
        seen[id(node)] = grad
        return grad

    def _structured(self, record: CustomGradient) -> set[str]:
        """Positional inputs the bodies treat as sequences (each may flatten to several inputs)."""
        names = set(record.inputs)
        found: set[str] = set()
        bodies: list[FuncNode] = [record.node] + [g.node for g in record.grads]
        for func in bodies:
            for node in function_nodes(func):
                found |= _sequence_uses(node, names)
        return found

    # -- call sites ------------------------------------------------------------------------
    def _call_sites(self, records: list[CustomGradient], calls: list[cst.Call]) -> None:
        by_binding: dict[int, CustomGradient] = {}
        methods: dict[tuple[int, str], CustomGradient] = {}
        for r in records:
            for b in r.binding_nodes:
                by_binding[id(b)] = r
            if r.class_node is not None and type(r.node) is cst.FunctionDef:
                methods[(id(r.class_node), r.node.name.value)] = r
        if not by_binding and not methods:
            return
        for call in calls:
            func, via_partial, args = call.func, False, list(call.args)
            if self._is_partial(call) and args and args[0].keyword is None and not args[0].star:
                func, via_partial, args = args[0].value, True, args[1:]
            record = None
            if type(func) is cst.Name:
                for value in self.ix.lookup_function(func):
                    record = by_binding.get(id(value)) or record
            elif (type(func) is cst.Attribute and type(func.value) is cst.Name
                  and func.value.value in ("self", "cls") and methods):
                cls = self.ix.enclosing(call, (cst.ClassDef,))
                if cls is not None:
                    record = methods.get((id(cls), func.attr.value))
            if record is None:
                continue
            record.call_sites.append(CallSite(
                anchor=call, locate=self.locate,
                positional=[a for a in args if a.keyword is None and not a.star],
                keywords=[a for a in args if a.keyword is not None],
                has_star=any(a.star for a in args), via_partial=via_partial,
            ))

    def _is_partial(self, call: cst.Call) -> bool:
        # cheap textual test first (as in is_custom_gradient): resolving builds environments
        func = call.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last != "partial" and last not in self.ix.import_aliases(_PARTIAL):
            return False
        return any(n in ("functools.partial", "partial") for n in self.ix.qualnames(call.func))


def _binding_name(binding: list[cst.CSTNode]) -> str | None:
    for b in binding:
        if type(b) is cst.Name:
            return b.value
        if type(b) is cst.Attribute:
            return b.attr.value
    return None


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if type(cls.body) is cst.IndentedBlock else []
    found = None
    for stmt in body:
        if type(stmt) is cst.FunctionDef and stmt.name.value == name:
            found = stmt
    return found


def _all_params(func: FuncNode) -> list[cst.Param]:
    p = func.params
    out = [*p.posonly_params, *p.params, *p.kwonly_params]
    if type(p.star_arg) is cst.Param:
        out.append(p.star_arg)
    if p.star_kwarg is not None:
        out.append(p.star_kwarg)
    return out


_SEQUENCE_NODES = frozenset({cst.Assign, cst.For, cst.CompFor, cst.Call, cst.StarredElement})


def _sequence_uses(node: cst.CSTNode, names: set[str]) -> set[str]:
    if type(node) not in _SEQUENCE_NODES:  # most nodes (a new branch below needs its class in _SEQUENCE_NODES)
        return set()

    def name_of(expr) -> str | None:
        return expr.value if type(expr) is cst.Name and expr.value in names else None

    found = set()
    if type(node) is cst.Assign and any(type(t.target) in (cst.Tuple, cst.List) for t in node.targets):
        if (n := name_of(node.value)):
            found.add(n)
    elif type(node) in (cst.For, cst.CompFor):
        if (n := name_of(node.iter)):
            found.add(n)
    elif type(node) is cst.Call:
        callee = cst.helpers.get_full_name_for_node(node.func) or ""
        last = callee.split(".")[-1]
        if last in _SEQUENCE_CALLS or "nest" in callee.split(".") or last in ("flatten", "map_structure"):
            for arg in node.args:
                if (n := name_of(arg.value)):
                    found.add(n)
        for arg in node.args:
            if arg.star == "*" and (n := name_of(arg.value)):
                found.add(n)
    elif type(node) is cst.StarredElement:
        if (n := name_of(node.value)):
            found.add(n)
    return found
