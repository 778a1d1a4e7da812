"""Find the custom gradients of an imported module and how to call them (the *entries*).

Definitions come from cg-lint's model (``cg_lint.api.find_custom_gradients``, with the project's
configured ``decorators``, and the callers of TF's own builders such as ``tf.recompute_grad``) and
from the checked decorator's registry (anything decorated at import time). An entry is what the
worker calls: the decorated function itself, a bound method of a fresh instance, a Keras layer
instance, or the module-level function/method that decorates a custom gradient at call time
(``outer.<locals>.inner`` is exercised through ``outer``).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from collections.abc import Callable
from typing import Any

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
        source = Path(path).read_text(encoding="utf-8")
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


def make_instance(cls: type, init: dict[str, Any]) -> Any:
    required, _ = _required_positional(cls.__init__)  # type: ignore[misc]  # the class's own, on purpose
    missing = [name for name in required[1:] if name not in init]
    if missing:
        raise CannotCall(f"cannot construct {cls.__name__}: __init__ requires {', '.join(missing)} "
                         "(declare `init` for it in [tool.cg_lint.runtime])")
    return cls(**init)


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

    def add_target(top: str, loc: DefInfo, d: Definition | None) -> None:
        parts = top.split(".")
        try:
            owner = _resolve(module, ".".join(parts[:-1])) if len(parts) > 1 else module
            member = inspect.getattr_static(owner, parts[-1]) if isinstance(owner, type) else getattr(owner, parts[-1])
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
                names, _ = _required_positional(cls.call)  # type: ignore[attr-defined]  # a Keras layer
                add(layer_name, loc, lambda: make_instance(cls, init), names[1:2] or ["inputs"], d)
            else:
                names, varargs = _required_positional(member)
                method = parts[-1]
                add(top, loc, lambda: getattr(make_instance(cls, init), method),
                    names[1:] or (["x"] if varargs else []), d)
            return
        if isinstance(member, type):
            init = inits.get(top, {})
            if _is_keras_layer(member):
                names, _ = _required_positional(member.call)  # type: ignore[attr-defined]  # a Keras layer
                add(top, loc, lambda: make_instance(member, init), names[1:2] or ["inputs"], d)
            elif callable(member):
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
