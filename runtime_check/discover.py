"""Find the custom gradients of an imported module and how to call them (the *entries*).

Definitions come from cg-lint's model (``cg_lint.api.find_custom_gradients``, with the project's
configured ``decorators``, and the callers of TF's own builders such as ``tf.recompute_grad``) and
from the checked decorator's registry (anything decorated at import time). An entry is what the
worker calls: the decorated function itself, a bound method of a fresh instance, a Keras layer
instance, or the module-level function/method that decorates a custom gradient at call time
(``outer.<locals>.inner`` is exercised through ``outer``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from collections.abc import Callable

from cg_lint.api import Definition, find_custom_gradients
from cg_lint.config import ConfigError, Settings, load_settings

from .issues import DefInfo

KINDS_AT_CALL_TIME = frozenset({"nested", "lambda", "call"})


def static_definitions(source: str, path: str, settings: Settings | None = None) -> list[Definition]:
    """cg-lint's definitions in ``source``, with the callers of TF's custom-gradient builders."""
    try:
        return find_custom_gradients(source, path, settings or project_settings(), builders=True)
    except Exception:  # a linter bug must not stop the runtime check; decorated functions still are
        return []


@functools.lru_cache(maxsize=1)
def project_settings() -> Settings:
    """The configuration cg-lint would use from here (its ``decorators`` name custom gradients too)."""
    try:
        return load_settings()
    except ConfigError:  # the command line reports a bad configuration; discovery goes on without it
        return Settings()


@functools.lru_cache(maxsize=256)
def _definitions_in_file(path: str) -> dict[str, Definition]:
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError):
        return {}
    return {d.qualname: d for d in static_definitions(source, path)}


def static_location(path: str | None, qualname: str) -> tuple[int, int] | None:
    """(line, column) the linter uses for this definition, so both tools point at the same place."""
    if path is None:
        return None
    found = _definitions_in_file(path).get(qualname)
    return None if found is None else (found.line, found.column)


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
    definitions: list[Definition] = field(default_factory=list)
    kind: str = "function"  # function | method | layer | factory
    body_qualname: str | None = None  # the def whose body says what the inputs are
    callee: str | None = None  # the name callers use, for call sites with literal shapes
    quantize: str | None = None  # a Keras layer checked after layer.quantize(these arguments)
    # parameters with a Python-number default that the project passes positionally: given their
    # default (TensorFlow counts them as inputs), in ``names`` after the required ones
    defaults: dict[str, Any] = field(default_factory=dict)


def _is_keras_layer(cls: type) -> bool:
    from .layers import is_keras_layer  # Keras specifics live in the one adapter module

    return is_keras_layer(cls)


def _required_positional(func: Callable[..., Any]) -> tuple[list[str], bool]:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return [], True
    required = [p.name for p in params
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return required, varargs


_SCALARS = (bool, int, float)


def passed_defaults(func: Callable[..., Any], required: list[str], path: str, d: Definition | None
                    ) -> dict[str, Any]:
    """The Python-number defaults after ``required`` that TensorFlow counts as inputs where the
    project calls ``func``: as many as the project's calls pass positionally (cg-lint's model of
    the file's calls), else as many as grad returns gradients for, else as the project's other
    modules call it; none when nothing says so (a call without them is as valid)."""
    if d is None:
        return {}
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return {}
    optional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is not p.empty][:8]
    scalars = []
    for p in optional:  # a prefix of them: a later one cannot be passed positionally without it
        if not isinstance(p.default, _SCALARS):
            break
        scalars.append(p)
    if not scalars:
        return {}
    counts = _input_counts(path, d.qualname)
    most = len(required) + len(scalars)
    fits: list[int] = []
    # the file's own calls, else grad's count, else calls elsewhere (matched by name: the least sure)
    for known in (counts.calls, counts.returned, counts.project_calls):
        if known:
            fits = [n - len(required) for n in known if len(required) < n <= most]
            break
    if not fits:
        return {}
    return {p.name: p.default for p in scalars[:max(fits)]}


def _input_counts(path: str, qualname: str) -> Any:
    from cg_lint.api import InputCounts, input_counts
    from cg_lint.project.trace import TraceContexts

    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError):
        return InputCounts(frozenset(), frozenset())
    global _CONTEXTS
    if _CONTEXTS is None:
        _CONTEXTS = TraceContexts()
    return input_counts(source, path, qualname, contexts=_CONTEXTS)


_CONTEXTS: Any = None  # the project's calls, scanned once per process


def filled_arguments(func: Callable[..., Any], given: dict[str, Any], skip_first: bool) -> dict[str, Any]:
    """``given`` plus a value for every other required parameter, of the kind its annotation or
    the body says (``constructor_values``; a function for parameters the body calls, whatever
    their annotation)."""
    from .constructor_values import Unknown, kind_of_annotation, kinds_from_body, make_value

    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return dict(given)
    if skip_first and params:
        params = params[1:]
    out = dict(given)
    missing = [p for p in params
               if p.name not in out and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    from_body = kinds_from_body(func) if missing else {}
    for p in missing:
        try:
            kind = "callable" if from_body.get(p.name) == "callable" else kind_of_annotation(p.annotation)
        except Unknown as unknown:
            raise CannotCall(f"{getattr(func, '__qualname__', 'it')} requires '{p.name}' ({unknown}); "
                             "declare `init` for it in [tool.cg_lint.runtime]") from None
        out[p.name] = make_value(kind or from_body.get(p.name, "int"), probe_function)
    return out


def make_instance(cls: type, init: dict[str, Any]) -> Any:
    required, _ = _required_positional(cls.__init__)  # type: ignore[misc]
    if set(required[1:]) - set(init):
        # required arguments nobody declared: the class's own docstring example comes before a guess
        from .layers import documented_arguments

        documented = documented_arguments(cls)
        if documented:
            with contextlib.suppress(Exception):
                given = {**documented, **init}
                return cls(**filled_arguments(cls.__init__, given, skip_first=True))  # type: ignore[misc]
    arguments = filled_arguments(cls.__init__, init, skip_first=True)  # type: ignore[misc]
    try:
        return cls(**arguments)
    except Exception as exc:
        guessed = sorted(set(arguments) - set(init))
        if not guessed:
            raise
        from .constructor_values import describe

        made = ", ".join(f"{k}={describe(arguments[k])}" for k in guessed)
        raise CannotCall(f"cannot construct {cls.__name__} with {made}"
                         f" ({type(exc).__name__}); declare `init` for it in [tool.cg_lint.runtime]") from None


@functools.lru_cache(maxsize=64)
def _parsed(path: str) -> Any:
    import ast as _ast
    from pathlib import Path

    try:
        return _ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def returns_inner(path: str, outer: str, inner: str, called: bool = False) -> bool:
    """``outer`` returns the custom gradient ``inner`` it defines (a factory), rather than calling it.
    ``called``: ``return inner(f)`` counts too (``inner`` is itself a factory of the next level).
    Read through cg-lint's model: names resolved in their scopes, not matched by spelling."""
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    returned = _returned(source, path, outer)
    target = f"{outer}.<locals>.{inner}"
    return target in returned.functions or called and target in returned.called


@functools.lru_cache(maxsize=64)
def _returned(source: str, path: str, outer: str) -> Any:
    from cg_lint.api import returned_functions

    return returned_functions(source, path, outer)


def probe_function(*args: Any, **kwargs: Any) -> Any:
    """Passed for a parameter the body calls: differentiable, scales its first argument."""
    import tensorflow as tf

    import numpy as np

    first = args[0] if args else next(iter(kwargs.values()))
    # the same math on a tensor and on the NumPy array an eager-only branch makes of it
    # (``x.numpy()`` when executing eagerly): else eager and traced runs differ by our doing
    scaled = (float, int, np.ndarray, np.generic)
    return tf.nest.map_structure(
        lambda t: t * 1.5 if tf.is_tensor(t) or isinstance(t, scaled) and not isinstance(t, bool) else t, first)


def _factory_entry(module: ModuleType, path: str, d: Definition, init: dict[str, Any]) -> Entry | None:
    """A custom gradient made by a factory: call the factory with its defaults (or declared
    arguments). Two levels too, as a decorator with options is written: ``top`` returns ``mid``
    (or ``mid(f)``), and ``mid`` returns the custom gradient; a ``mid`` returned uncalled is called
    with a value for each parameter (a function for one its body calls)."""
    top = d.qualname.split(".<locals>")[0]
    levels = d.qualname.count(".<locals>.")
    if "." in top or levels not in (1, 2):
        return None
    factory = getattr(module, top, None)
    if not callable(factory) or isinstance(factory, type):
        return None
    mid = d.qualname.split(".<locals>.")[1] if levels == 2 else ""
    if levels == 1 and not returns_inner(path, top, d.name):
        return None
    if levels == 2 and not (returns_inner(path, f"{top}.<locals>.{mid}", d.name)
                            and returns_inner(path, top, mid, called=True)):
        return None

    def make() -> Callable[..., Any]:
        arguments = filled_arguments(factory, init, skip_first=False)
        made = factory(**arguments)
        if mid and callable(made) and getattr(inspect.unwrap(made), "__qualname__", "") == f"{top}.<locals>.{mid}":
            made = made(**filled_arguments(made, {}, skip_first=False))
        if not callable(made):
            raise CannotCall(f"'{top}' did not return a function")
        return made

    names = list(d.inputs) or ["x"]
    location = DefInfo(d.qualname, module.__name__, path, d.line, d.column)
    return Entry(d.qualname, location, make, names, None, [d], "factory", d.qualname, d.name)


def _builds_custom_gradient(obj: Any) -> bool:
    """``obj`` (a decorator, or a decorator factory) defines a custom gradient inside itself, as
    TensorFlow Probability's ``custom_gradient(vjp_fwd=..., vjp_bwd=...)`` does: what it decorates
    is a custom gradient, whichever module it comes from."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    qualname = getattr(obj, "__qualname__", None)
    try:
        source = inspect.getsourcefile(obj)
    except TypeError:
        return False
    if not qualname or not source:
        return False
    return any(q.startswith(f"{qualname}.<locals>.") for q in _definitions_in_file(source))


def decorated_by_builders(module: ModuleType, path: str, known: set[str]) -> list[Definition]:
    """Functions (module-level or nested) decorated with another module's custom-gradient builder."""
    import ast as _ast

    from .inputs.hints import dotted

    tree = _parsed(path)
    if tree is None:
        return []
    found = []

    def functions(body: list[Any], prefix: str) -> Any:
        for node in body:
            if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef)):
                yield f"{prefix}{node.name}", node
                yield from functions(node.body, f"{prefix}{node.name}.<locals>.")

    for qualname, node in functions(tree.body, ""):
        if qualname in known:
            continue
        for decorator in node.decorator_list:
            name = dotted(decorator.func if isinstance(decorator, _ast.Call) else decorator)
            try:
                builder = _resolve(module, name) if name else None
            except AttributeError:
                continue
            if builder is not None and _builds_custom_gradient(builder):
                args = node.args
                inputs = tuple(a.arg for a in [*args.posonlyargs, *args.args])
                kind = "nested" if "<locals>" in qualname else "function"
                found.append(Definition(node.name, qualname, node.lineno, node.col_offset + 5, kind, inputs,
                                        args.vararg is not None))
                break
    return found


def _resolve(module: ModuleType, dotted: str) -> Any:
    obj: Any = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def entries_for(module: ModuleType, path: str, defs: list[Definition], inits: dict[str, dict[str, Any]]) -> list[Entry]:
    """One entry per distinct top-level callable; unresolvable definitions become problem entries."""
    from .checked import checked_definition

    entries: dict[str, Entry] = {}

    def location(d: Definition) -> DefInfo:
        return DefInfo(d.qualname, module.__name__, path, d.line, d.column)

    def add(qualname: str, loc: DefInfo, make: Callable[[], Callable[..., Any]], names: list[str],
            d: Definition | None = None, problem: str | None = None) -> None:
        entry = entries.get(qualname)
        if entry is None:
            entry = entries[qualname] = Entry(qualname, loc, make, names, problem)
        if d is not None:
            entry.definitions.append(d)

    def unusable(qualname: str, loc: DefInfo, why: str, d: Definition | None = None) -> None:
        def fail() -> Callable[..., Any]:
            raise CannotCall(why)
        add(qualname, loc, fail, [], d, why)

    def add_layer(layer_name: str, cls: type, init: dict[str, Any], loc: DefInfo,
                  d: Definition | None) -> None:
        """The layer called as built; or, for a definition only a quantization mode reaches, one
        entry per mode (``Dense[int8]``) that quantizes the built layer before calling it."""
        from .layers import QuantizedLayerCall, modes_reaching, tested_configs

        names, _ = _required_positional(cls.call)  # type: ignore[attr-defined]
        names = names[1:2] or ["inputs"]

        def build() -> Any:
            return make_instance(cls, init)

        modes = []
        if d is not None and d.qualname.startswith(f"{layer_name}."):
            method = d.qualname[len(layer_name) + 1:].split(".")[0]
            modes = modes_reaching(_parsed(path), layer_name, method, d.line)
        if not modes:
            add(layer_name, loc, build, names, d)
            entries[layer_name].kind = "layer"
            return
        configs = tested_configs(path, cls.__name__)
        for mode in modes:
            # quantize(mode) as Model.quantize does, then each configuration of that mode the
            # tests write with literals (Keras's int4 per channel is only reached with one)
            for config in [None, *(c for c in configs if c.mode == mode)]:
                key = f"{layer_name}[{mode}]" if config is None else f"{layer_name}[{mode}, {config.label}]"
                # the row names the layer in its mode: which of its custom gradients a mode
                # reaches (int4 per channel or by blocks) is the layer's choice, seen in findings
                where = DefInfo(key, loc.module, loc.path, loc.line, loc.column)
                make = functools.partial(QuantizedLayerCall, build, mode, config, CannotCall)
                add(key, where, make, names, d)
                entry = entries[key]
                entry.kind, entry.body_qualname = "layer", f"{layer_name}.call"
                entry.quantize = repr(mode) if config is None else f"{mode!r}, config={config.label}"

    def add_target(top: str, loc: DefInfo, d: Definition | None) -> None:
        parts = top.split(".")
        try:
            owner = _resolve(module, ".".join(parts[:-1])) if len(parts) > 1 else module
            member = (inspect.getattr_static(owner, parts[-1]) if isinstance(owner, type)
                      else getattr(owner, parts[-1]))
        except AttributeError:
            unusable(top, loc, f"'{top}' is not reachable as a module attribute", d)
            return
        if isinstance(owner, type):
            cls = owner
            init = inits.get(".".join(parts[:-1]), {})
            if isinstance(member, (staticmethod, classmethod)):
                bound = getattr(cls, parts[-1])
                names, varargs = _required_positional(bound)
                defaults = passed_defaults(bound, names, path, d) if names else {}
                add(top, loc, lambda: bound, [*names, *defaults] or (["x"] if varargs else []), d)
                entries[top].defaults = entries[top].defaults or defaults
            elif _is_keras_layer(cls):
                add_layer(".".join(parts[:-1]), cls, init, loc, d)
            else:
                names, varargs = _required_positional(member)
                method = parts[-1]
                add(top, loc, lambda: getattr(make_instance(cls, init), method),
                    names[1:] or (["x"] if varargs else []), d)
            return
        if isinstance(member, type):
            init = inits.get(top, {})
            if _is_keras_layer(member):
                add_layer(top, member, init, loc, d)
            elif callable(getattr(member, "__call__", None)):  # noqa: B004 (an instance's own __call__)
                names, _ = _required_positional(member.__call__)
                add(top, loc, lambda: make_instance(member, init), names[1:], d)
            return
        if callable(member):
            names, varargs = _required_positional(member)
            defaults = passed_defaults(member, names, path, d) if names else {}
            if not names and varargs:
                names = list(d.inputs) if d is not None and d.inputs else ["x"]
            add(top, loc, lambda: member, [*names, *defaults], d)
            entries[top].defaults = entries[top].defaults or defaults

    defs = defs + decorated_by_builders(module, path, {d.qualname for d in defs})
    made_in: dict[str, Entry] = {}  # a factory's scope -> the entry that calls what it makes
    rest = []
    for d in sorted(defs, key=lambda d: (d.line, d.column)):
        top = d.qualname.split(".<locals>")[0]
        factory = _factory_entry(module, path, d, inits.get(d.qualname) or inits.get(top) or {}) \
            if d.qualname != top else None
        if factory is not None:
            entries.setdefault(factory.qualname, factory)
            made_in.setdefault(d.qualname.rsplit(".<locals>.", 1)[0], entries[factory.qualname])
            continue
        rest.append(d)
    for d in rest:
        top = d.qualname.split(".<locals>")[0]
        holder = made_in.get(d.qualname.rsplit(".<locals>.", 1)[0]) if ".<locals>." in d.qualname else None
        if holder is not None:
            # made beside a custom gradient the factory returns (its grad's helper): reached
            # through that one, not by calling the factory with tensors
            holder.definitions.append(d)
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
    from .layers import other_backend_only

    for entry in entries.values():
        # Keras's multi-backend code: nothing under TensorFlow reaches these definitions
        elsewhere = [other_backend_only(_parsed(path), d.qualname.split(".<locals>")[0], d.line)
                     for d in entry.definitions if ".<locals>." in d.qualname]
        if entry.problem is None and elsewhere and len(elsewhere) == len(entry.definitions) \
                and all(elsewhere):
            entry.problem = elsewhere[0]
        if not entry.names and entry.problem is None:
            entry.problem = f"'{entry.qualname}' takes no positional inputs to probe"
    return list(entries.values())
