"""Find the custom gradients of an imported module and how to call them (the *entries*).

Definitions come from cg-lint's model (``cg_lint.api.find_custom_gradients``) when available, from
a small ``ast`` scan otherwise, and from the checked decorator's registry (anything decorated at
import time). An entry is what the worker calls: the decorated function itself, a bound method of
a fresh instance, a Keras layer instance, or the module-level function/method that decorates a
custom gradient at call time (``outer.<locals>.inner`` is exercised through ``outer``).
"""

from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

from .issues import DefInfo

KINDS_AT_CALL_TIME = frozenset({"nested", "lambda", "call"})


@dataclass(frozen=True)
class StaticDef:
    """cg-lint's ``Definition``, or the fallback scan's equivalent."""

    name: str
    qualname: str
    line: int
    column: int
    kind: str
    inputs: tuple[str, ...] = ()
    has_varargs: bool = False


def linter_api() -> Any | None:
    try:
        from cg_lint import api
    except ImportError:
        return None
    return api if hasattr(api, "find_custom_gradients") else None


def static_definitions(source: str, path: str) -> list[StaticDef]:
    """cg-lint's definitions, plus what the small scan adds (callers of ``tf.recompute_grad`` ...)."""
    scanned = ast_definitions(source)
    api = linter_api()
    if api is None:
        return scanned
    try:
        defs = [
            StaticDef(d.name, d.qualname, d.line, d.column, d.kind, tuple(d.inputs), bool(d.has_varargs))
            for d in api.find_custom_gradients(source, path)
        ]
    except Exception:  # a linter bug must not stop the runtime check; the scan still works
        return scanned
    known = {d.qualname for d in defs}
    return defs + [d for d in scanned if d.qualname not in known]


@functools.lru_cache(maxsize=256)
def _definitions_in_file(path: str) -> dict[str, StaticDef]:
    try:
        source = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        return {}
    return {d.qualname: d for d in static_definitions(source, path)}


def static_location(path: str | None, qualname: str) -> tuple[int, int] | None:
    """(line, column) the linter uses for this definition, so both tools point at the same place."""
    if path is None:
        return None
    found = _definitions_in_file(path).get(qualname)
    return None if found is None else (found.line, found.column)


# -- fallback: a small ast scan ----------------------------------------------------------------------


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


# TF's own helpers that build a custom gradient when called: their callers are exercised too.
CUSTOM_GRADIENT_BUILDERS = frozenset({"custom_gradient", "recompute_grad", "grad_pass_through"})


def _is_custom_gradient(node: ast.AST) -> bool:
    return _dotted(node).split(".")[-1] in CUSTOM_GRADIENT_BUILDERS


def _inputs(args: ast.arguments, drop_first: bool) -> tuple[tuple[str, ...], bool]:
    names = [a.arg for a in [*args.posonlyargs, *args.args]]
    if drop_first and names:
        names = names[1:]
    return tuple(names), args.vararg is not None


def ast_definitions(source: str) -> list[StaticDef]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[StaticDef] = []

    def visit(body: list[ast.stmt], prefix: str, scope: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{node.name}"
                decorators = [_dotted(d).split(".")[-1] for d in node.decorator_list]
                if any(_is_custom_gradient(d) for d in node.decorator_list):
                    if scope == "class":
                        kind = ("staticmethod" if "staticmethod" in decorators
                                else "classmethod" if "classmethod" in decorators else "method")
                    else:
                        kind = "nested" if scope == "function" else "function"
                    inputs, varargs = _inputs(node.args, kind in ("method", "classmethod"))
                    found.append(StaticDef(node.name, qualname, node.lineno, node.col_offset + 1, kind, inputs,
                                           varargs))
                visit(node.body, f"{qualname}.<locals>.", "function")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.", "class")
            else:
                for sub in ast.walk(node):
                    direct = isinstance(sub, ast.Call) and not isinstance(sub.func, ast.Call)
                    if direct and _is_custom_gradient(sub.func) and sub.args:
                        target = getattr(node, "targets", [None])[0] if isinstance(node, ast.Assign) else None
                        name = target.id if isinstance(target, ast.Name) else _dotted(sub.args[0]) or "<lambda>"
                        kind = "call" if scope != "function" else "nested"
                        if isinstance(sub.args[0], ast.Lambda):
                            inputs, varargs = _inputs(sub.args[0].args, False)
                            kind = "lambda" if scope == "function" else "call"
                        else:
                            inputs, varargs = (), False
                        found.append(StaticDef(name, f"{prefix}{name}", sub.lineno, sub.col_offset + 1, kind, inputs,
                                               varargs))

    visit(tree.body, "", "module")
    return found


# -- entries -------------------------------------------------------------------------------------------


class CannotCall(Exception):
    """The entry cannot be called without information the user has to give (reported as CG130)."""


@dataclass
class Entry:
    qualname: str
    location: DefInfo
    make: Callable[[], Callable[..., Any]]
    names: list[str]
    problem: str | None = None
    definitions: list[StaticDef] = field(default_factory=list)
    kind: str = "function"  # function | method | layer | factory
    body_qualname: str | None = None  # the def whose body says what the inputs are
    callee: str | None = None  # the name callers use, for call sites with literal shapes


def _is_keras_layer(cls: type) -> bool:
    for base in inspect.getmro(cls):
        if base.__name__ == "Layer" and base.__module__.startswith(("keras", "tf_keras", "tensorflow")):
            return True
    return False


def _required_positional(func: Callable[..., Any]) -> tuple[list[str], bool]:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return [], True
    required = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return required, varargs


# a value for a required argument nobody declared, by annotation; unannotated ones get a small int
# (units, filters, heads: what layer constructors mostly require)
_ANNOTATED = {"int": 3, "float": 0.5, "bool": False}


def filled_arguments(func: Callable[..., Any], given: dict[str, Any], skip_first: bool,
                     callables: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """``given`` plus a value for every other required parameter, from its annotation (a function
    for parameters the body calls)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return dict(given)
    if skip_first and params:
        params = params[1:]
    out = dict(given)
    for p in params:
        if p.name in out or p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name in callables:
            out[p.name] = probe_function
            continue
        annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        if annotation and annotation not in _ANNOTATED:
            raise CannotCall(f"{getattr(func, '__qualname__', 'it')} requires '{p.name}' ({annotation}); "
                             "declare `init` for it in [tool.cg_lint.runtime]")
        out[p.name] = _ANNOTATED.get(annotation, 3)
    return out


def make_instance(cls: type, init: dict[str, Any]) -> Any:
    arguments = filled_arguments(cls.__init__, init, skip_first=True)
    try:
        return cls(**arguments)
    except Exception as exc:
        guessed = sorted(set(arguments) - set(init))
        if not guessed:
            raise
        raise CannotCall(f"cannot construct {cls.__name__} with {', '.join(f'{k}={arguments[k]!r}' for k in guessed)}"
                         f" ({type(exc).__name__}); declare `init` for it in [tool.cg_lint.runtime]") from None


def returns_inner(path: str, outer: str, inner: str) -> bool:
    """``outer`` returns the custom gradient ``inner`` it defines (a factory), rather than calling it."""
    import ast as _ast

    from .inputs.hints import find_function

    try:
        tree = _ast.parse(open(path, encoding="utf-8").read())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return False
    function = find_function(tree, outer)
    if function is None:
        return False
    bound = {inner}
    for node in _ast.walk(function):
        if isinstance(node, _ast.Assign) and isinstance(node.value, _ast.Call) and \
                any(isinstance(a, _ast.Name) and a.id == inner for a in node.value.args):
            bound.update(t.id for t in node.targets if isinstance(t, _ast.Name))
    def returned(value: Any) -> bool:
        if isinstance(value, _ast.Name):
            return value.id in bound
        # return make_decorator(f, inner), return functools.wraps(f)(inner)
        return isinstance(value, _ast.Call) and (any(returned(a) for a in value.args) or returned(value.func))

    return any(isinstance(node, _ast.Return) and returned(node.value) for node in _ast.walk(function))


def called_parameters(path: str, qualname: str) -> set[str]:
    """Parameters of ``qualname`` that its body calls: they take a function."""
    import ast as _ast

    from .inputs.hints import find_function

    try:
        tree = _ast.parse(open(path, encoding="utf-8").read())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return set()
    function = find_function(tree, qualname)
    if function is None:
        return set()
    params = {a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}
    return {n.func.id for n in _ast.walk(function)
            if isinstance(n, _ast.Call) and isinstance(n.func, _ast.Name) and n.func.id in params}


def probe_function(*args: Any, **kwargs: Any) -> Any:
    """Passed for a parameter the body calls: differentiable, scales its first argument."""
    import tensorflow as tf

    first = args[0] if args else next(iter(kwargs.values()))
    return tf.nest.map_structure(lambda t: t * 1.5 if tf.is_tensor(t) or isinstance(t, float) else t, first)


def _factory_entry(module: ModuleType, path: str, d: StaticDef, init: dict[str, Any]) -> Entry | None:
    """A custom gradient made by a factory: call the factory with its defaults (or declared arguments)."""
    top = d.qualname.split(".<locals>")[0]
    if "." in top or ".<locals>." not in d.qualname or d.qualname.count(".<locals>.") != 1:
        return None
    factory = getattr(module, top, None)
    if not callable(factory) or isinstance(factory, type) or not returns_inner(path, top, d.name):
        return None

    callables = called_parameters(path, top)

    def make() -> Callable[..., Any]:
        arguments = filled_arguments(factory, init, skip_first=False, callables=callables)
        made = factory(**arguments)
        if not callable(made):
            raise CannotCall(f"'{top}' did not return a function")
        return made

    names = list(d.inputs) or ["x"]
    location = DefInfo(d.qualname, module.__name__, path, d.line, d.column)
    return Entry(d.qualname, location, make, names, None, [d], "factory", d.qualname, d.name)


def _resolve(module: ModuleType, dotted: str) -> Any:
    obj: Any = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def entries_for(module: ModuleType, path: str, defs: list[StaticDef], inits: dict[str, dict[str, Any]]) -> list[Entry]:
    """One entry per distinct top-level callable; unresolvable definitions become problem entries."""
    from .checked import checked_definition

    entries: dict[str, Entry] = {}

    def location(d: StaticDef) -> DefInfo:
        return DefInfo(d.qualname, module.__name__, path, d.line, d.column)

    def add(qualname: str, loc: DefInfo, make: Callable[[], Callable[..., Any]], names: list[str],
            d: StaticDef | None = None, problem: str | None = None) -> None:
        entry = entries.get(qualname)
        if entry is None:
            entry = entries[qualname] = Entry(qualname, loc, make, names, problem)
        if d is not None:
            entry.definitions.append(d)

    def unusable(qualname: str, loc: DefInfo, why: str, d: StaticDef | None = None) -> None:
        def fail() -> Callable[..., Any]:
            raise CannotCall(why)
        add(qualname, loc, fail, [], d, why)

    def add_target(top: str, loc: DefInfo, d: StaticDef | None) -> None:
        parts = top.split(".")
        try:
            owner = _resolve(module, ".".join(parts[:-1])) if len(parts) > 1 else module
            if isinstance(owner, type):
                member = inspect.getattr_static(owner, parts[-1])
            else:
                member = getattr(owner, parts[-1])
        except AttributeError:
            unusable(top, loc, f"'{top}' is not reachable as a module attribute", d)
            return
        if isinstance(owner, type):
            cls = owner
            init = inits.get(".".join(parts[:-1]), {})
            if isinstance(member, (staticmethod, classmethod)):
                bound = getattr(cls, parts[-1])
                names, varargs = _required_positional(bound)
                add(top, loc, lambda: bound, names or (["x"] if varargs else []), d)
            elif _is_keras_layer(cls):
                layer_name = ".".join(parts[:-1])
                names, _ = _required_positional(cls.call)
                add(layer_name, loc, lambda: make_instance(cls, init), names[1:2] or ["inputs"], d)
                entries[layer_name].kind = "layer"
            else:
                names, varargs = _required_positional(member)
                method = parts[-1]
                add(top, loc, lambda: getattr(make_instance(cls, init), method),
                    names[1:] or (["x"] if varargs else []), d)
            return
        if isinstance(member, type):
            init = inits.get(top, {})
            if _is_keras_layer(member):
                names, _ = _required_positional(member.call)
                add(top, loc, lambda: make_instance(member, init), names[1:2] or ["inputs"], d)
                entries[top].kind = "layer"
            elif callable(getattr(member, "__call__", None)):
                names, _ = _required_positional(member.__call__)
                add(top, loc, lambda: make_instance(member, init), names[1:], d)
            return
        if callable(member):
            names, varargs = _required_positional(member)
            if not names and varargs:
                names = list(d.inputs) if d is not None and d.inputs else ["x"]
            add(top, loc, lambda: member, names, d)

    for d in sorted(defs, key=lambda d: (d.line, d.column)):
        top = d.qualname.split(".<locals>")[0]
        factory = _factory_entry(module, path, d, inits.get(d.qualname) or inits.get(top) or {}) \
            if d.qualname != top else None
        if factory is not None:
            entries.setdefault(factory.qualname, factory)
            continue
        add_target(top, location(d), d)

    # Anything decorated at import time that the source scan missed (generated code, aliases).
    for name, value in list(vars(module).items()):
        info = checked_definition(value)
        if info is not None and info.path == path and name not in entries:
            add_target(name, info, None)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for member_name, member in vars(value).items():
                info = checked_definition(member)
                qualname = f"{name}.{member_name}"
                if info is not None and qualname not in entries and name not in entries:
                    add_target(qualname, info, None)
    for entry in entries.values():
        if not entry.names and entry.problem is None:
            entry.problem = f"'{entry.qualname}' takes no positional inputs to probe"
    return list(entries.values())
