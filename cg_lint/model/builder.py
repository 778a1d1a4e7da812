"""Build the model of a file: find every custom-gradient definition and describe it once."""

from __future__ import annotations

import libcst as cst

from cg_lint.model.records import (
    CallSite,
    CustomGradient,
    ForwardReturn,
    FuncNode,
    GradFn,
    Param,
    ReturnSite,
    Signature,
)
from cg_lint.model.bodies import RECORD_NODES, all_bodies
from cg_lint.syntax.environments import Env
from cg_lint.syntax.index import FileIndex

_PARTIAL = ("functools.partial", "partial")
_SEQUENCE_CALLS = frozenset({"len", "zip", "enumerate", "list", "tuple", "map", "sorted", "reversed", "iter"})


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
                    self._add(node, [node])  # type: ignore[arg-type]
            elif kind is cst.Call:
                calls.append(node)  # type: ignore[arg-type]
                self._maybe_call_form(node)  # type: ignore[arg-type]
            elif kind is cst.Lambda:
                order[id(node)] = i
        records = sorted(self.by_node.values(), key=lambda r: order.get(id(r.node), 0))
        self.ix.memo[RECORD_NODES] = frozenset(self.by_node)  # nested bodies leave these out
        for record in records:
            self._describe(record)
        self._call_sites(records, calls)
        return records

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
                kind = ("staticmethod" if "staticmethod" in decos
                        else "classmethod" if "classmethod" in decos else "method")
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
        return qualname(self.ix, func, name)

    # -- description -----------------------------------------------------------------------
    def env_for(self, func: FuncNode) -> Env:
        return self.ix.env_for(func)

    def _returns(self, func: FuncNode) -> list[ReturnSite]:
        if type(func) is cst.Lambda:
            return [ReturnSite(anchor=func.body, locate=self.locate, value=func.body)]
        return [ReturnSite(anchor=node, locate=self.locate, value=node.value)
                for node in self.ix.walk.own_nodes(func.body) if type(node) is cst.Return]

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
        elif (type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value in ("self", "cls")
              and record.class_node is not None):
            node = _method(record.class_node, expr.attr.value)
            bound = node is not None and "staticmethod" not in _decorator_names(node)
        elif type(expr) is cst.Call and self._is_partial(expr):
            return self._partial_grad(expr, env, record, seen)
        if node is None:
            return None
        if id(node) in seen:
            return seen[id(node)]
        if type(node) is cst.FunctionDef:
            name, anchor = node.name.value, node.name
            is_cg = any(self._is_cg_decorator(d) for d in node.decorators)
        else:
            name, anchor, is_cg = "<lambda>", node, False  # type: ignore[assignment]
        grad = GradFn(anchor=anchor, locate=self.locate, node=node, name=name,
                      signature=_signature(node, bound), returns=self._returns(node),
                      bound_method=bound, is_custom_gradient=is_cg)
        seen[id(node)] = grad
        return grad

    def _partial_grad(self, call: cst.Call, env: Env, record: CustomGradient,
                      seen: dict[int, GradFn]) -> GradFn | None:
        """``functools.partial(g, a, b)``: TF calls it with the upstreams after the bound leading
        arguments, so grad's upstream parameters are g's remaining positional ones."""
        args = list(call.args)
        if not args or args[0].keyword is not None or args[0].star or any(a.star for a in args):
            return None
        inner = self._grad_fn(args[0].value, env, record, {})
        if inner is None or type(inner.node) is not cst.FunctionDef or id(call) in seen:
            return seen.get(id(call)) if inner is not None else None
        bound = sum(1 for a in args[1:] if a.keyword is None)
        keywords = {a.keyword.value for a in args[1:] if a.keyword is not None}
        sig = inner.signature
        if len(sig.positional) < bound or any(p.name in keywords for p in sig.positional[bound:]):
            return None  # a keyword bound to a positional parameter: what TF passes is not clear
        signature = Signature(positional=sig.positional[bound:], varargs=sig.varargs,
                              kwonly=[p for p in sig.kwonly if p.name not in keywords], kwargs=sig.kwargs)
        grad = GradFn(anchor=call, locate=self.locate, node=inner.node, name=inner.name,
                      signature=signature, returns=inner.returns, bound_method=inner.bound_method,
                      is_custom_gradient=inner.is_custom_gradient)
        seen[id(call)] = grad
        return grad

    def _structured(self, record: CustomGradient) -> set[str]:
        """Positional inputs the bodies treat as sequences (each may flatten to several inputs);
        ``record.structured_sizes`` gets those only ever unpacked to the same number of names."""
        names = set(record.inputs)
        uses: dict[str, set[int | None]] = {}
        for body in all_bodies(self.ix, record):
            for node in self.ix.walk.function_nodes(body.func):
                for name, size in _sequence_uses(node, names).items():
                    uses.setdefault(name, set()).add(size)
        record.structured_sizes = {n: next(iter(s)) for n, s in uses.items()  # type: ignore[misc]
                                   if len(s) == 1 and None not in s}
        return set(uses) | _annotated_structures(record)

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
                values = self.ix.lookup_function(func)
                for value in values:
                    record = by_binding.get(id(value)) or record
                if record is None and len(values) == 1 and type(values[0]) is cst.Call:
                    record = self._factory_result(values[0], by_binding)  # `op = make_op(); op(x)`
            elif type(func) is cst.Call:
                record = self._factory_result(func, by_binding)  # `make_op()(x)`
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

    def _factory_result(self, call: cst.Call, by_binding: dict[int, CustomGradient]) -> CustomGradient | None:
        """The custom gradient a call of a plain local function (a factory) returns: every return
        of the factory names the same custom gradient defined in it."""
        if type(call.func) is not cst.Name:
            return None
        defs = self.ix.lookup_function(call.func)
        if len(defs) != 1 or type(defs[0]) is not cst.FunctionDef or id(defs[0]) in by_binding:
            return None
        factory = defs[0]
        found: set[int] = set()
        record = None
        for node in self.ix.walk.own_nodes(factory.body):
            if type(node) is cst.Yield or type(node) is cst.Return and type(node.value) is not cst.Name:
                return None
            if type(node) is cst.Return:
                bound = self.env_for(factory).bindings.get(node.value.value, [])
                made = [by_binding[id(b)] for b in bound if id(b) in by_binding]
                if len(made) != 1 or len(bound) != 1:
                    return None
                record = made[0]
                found.add(id(record))
        return record if len(found) == 1 else None

    def _is_partial(self, call: cst.Call) -> bool:
        # cheap textual test first (as in is_custom_gradient): resolving builds environments
        func = call.func
        last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
        if last != "partial" and last not in self.ix.import_aliases(_PARTIAL):
            return False
        return any(n in ("functools.partial", "partial") for n in self.ix.qualnames(call.func))


def qualname(index: FileIndex, node: cst.CSTNode, name: str) -> str:
    """Python's ``__qualname__`` for ``name`` defined at ``node`` (``Cls.f``, ``f.<locals>.g``)."""
    parts = [name]
    node = index.parent(node)  # type: ignore[assignment]
    while node is not None:
        if type(node) is cst.ClassDef:
            parts.append(node.name.value)
        elif type(node) is cst.FunctionDef:
            parts.extend(["<locals>", node.name.value])
        elif type(node) is cst.Lambda:
            parts.extend(["<locals>", "<lambda>"])
        node = index.parent(node)  # type: ignore[assignment]
    return ".".join(reversed(parts))


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


_SEQUENCE_NODES = frozenset({cst.Assign, cst.For, cst.CompFor, cst.Call, cst.StarredElement, cst.Subscript,
                             cst.Attribute})


def _sequence_uses(node: cst.CSTNode, names: set[str]) -> dict[str, int | None]:  # noqa: C901 (a table of cases)
    """Inputs ``node`` uses as sequences, with the length an unpacking gives them (else None)."""
    if type(node) not in _SEQUENCE_NODES:  # most nodes (a new branch below needs its class in _SEQUENCE_NODES)
        return {}

    def name_of(expr) -> str | None:
        return expr.value if type(expr) is cst.Name and expr.value in names else None

    found: dict[str, int | None] = {}
    if type(node) is cst.Assign and any(type(t.target) in (cst.Tuple, cst.List) for t in node.targets):
        if (n := name_of(node.value)):
            for t in node.targets:
                target = t.target
                if type(target) in (cst.Tuple, cst.List):
                    starred = any(type(e) is cst.StarredElement for e in target.elements)  # type: ignore[union-attr]
                    size = None if starred or len(node.targets) > 1 else len(target.elements)  # type: ignore[union-attr]
                    found[n] = size
    elif type(node) in (cst.For, cst.CompFor):
        if (n := name_of(node.iter)):
            found[n] = None
    elif type(node) is cst.Call:
        callee = cst.helpers.get_full_name_for_node(node.func) or ""
        last = callee.split(".")[-1]
        if last in _SEQUENCE_CALLS or "nest" in callee.split(".") or last in ("flatten", "map_structure"):
            for arg in node.args:
                if (n := name_of(arg.value)):
                    found[n] = None
        for arg in node.args:
            if arg.star == "*" and (n := name_of(arg.value)):
                found[n] = None
    elif type(node) is cst.StarredElement and (n := name_of(node.value)):
        found[n] = None
    elif type(node) is cst.Subscript and (n := name_of(node.value)) and any(
            type(e.slice) is cst.Index and isinstance(e.slice.value, (cst.SimpleString, cst.ConcatenatedString))
            for e in node.slice):
        found[n] = None  # params["w"]: a dict input, one input per value
    elif (type(node) is cst.Attribute and (n := name_of(node.value))
          and node.attr.value in ("items", "values", "keys")):
        found[n] = None
    return found


# annotations of a container TF flattens into several inputs (`shape: tuple[int, ...]`)
_CONTAINERS = frozenset({"tuple", "list", "dict", "Tuple", "List", "Dict", "Sequence", "Mapping",
                         "MutableSequence", "MutableMapping", "Iterable", "Collection"})


def _annotated_structures(record: CustomGradient) -> set[str]:
    out = set()
    for param in record.signature.positional:
        annotation = param.node.annotation
        if annotation is None:
            continue
        expr = annotation.annotation
        if type(expr) is cst.Subscript:
            expr = expr.value
        name = cst.helpers.get_full_name_for_node(expr) or ""
        if name.rsplit(".", 1)[-1] in _CONTAINERS:
            out.add(param.name)
    return out
