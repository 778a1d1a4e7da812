"""Values for the required arguments of a constructor or factory that nobody declared.

A method's custom gradient is reached through an instance, a factory's through a call of the
factory, so their required arguments need values. What the source says decides the kind of value:
the parameter's annotation (``int``, ``float``, ``bool``, ``tf.Tensor``, ``tf.Variable``,
``np.ndarray``, ``Callable``), else what the body checks or does with it (``isinstance(p,
tf.Variable)``, ``callable(p)``, ``p(...)``), else a small int (units, filters, heads: what layer
constructors mostly require). An annotation or a check naming anything else cannot be guessed.
"""

from __future__ import annotations

import ast
import collections.abc
import functools
import inspect
import textwrap
import typing
from typing import Any

# the kinds a value can be made for, by the name an annotation or an isinstance check uses
_KIND_OF_NAME = {
    "int": "int", "float": "float", "bool": "bool",
    "Tensor": "tensor", "EagerTensor": "tensor", "TensorLike": "tensor",
    "Variable": "variable", "ResourceVariable": "variable",
    "ndarray": "array",
    "Callable": "callable",
}


class Unknown(Exception):
    """The source names a kind of value that cannot be made here (its text says which)."""


def _annotation_text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is collections.abc.Callable or annotation is typing.Callable:
        return "Callable"
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _annotation_text(options[0]) if options else ""
    return getattr(annotation, "__name__", "") or str(annotation)


def _unwrapped(text: str) -> str:
    """``Optional[X]``, ``X | None`` and ``Union[X, ...]`` (as strings, under postponed annotations) -> ``X``."""
    text = text.strip().strip("'\"")
    for wrapper in ("Optional[", "typing.Optional[", "Union[", "typing.Union["):
        if text.startswith(wrapper) and text.endswith("]"):
            inner = text[len(wrapper):-1]
            return _unwrapped(next((p for p in inner.split(",") if p.strip() != "None"), inner))
    if "|" in text:
        return _unwrapped(next((p for p in text.split("|") if p.strip() != "None"), text))
    return text


def kind_of_annotation(annotation: Any) -> str | None:
    """The kind an annotation asks for; None when there is none; ``Unknown`` when it is another type."""
    text = _unwrapped(_annotation_text(annotation))
    if not text:
        return None
    head = text.split("[", 1)[0].strip()
    name = head.rsplit(".", 1)[-1]
    if name in _KIND_OF_NAME:
        return _KIND_OF_NAME[name]
    raise Unknown(text)


def describe(value: Any) -> str:
    """A short text for a made value (a tensor's repr spans lines)."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        kind = "tf.Variable" if hasattr(value, "assign") else type(value).__name__
        dims = ",".join(str(d) for d in shape)
        return f"{kind} {getattr(dtype, 'name', dtype)}[{dims}]"
    if callable(value):
        return "a function"
    return repr(value)


def _type_names(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _type_names(e)]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Name):
        return [node.id]
    return []


@functools.lru_cache(maxsize=256)
def kinds_from_body(func: Any) -> dict[str, str]:
    """Parameter -> kind, from ``isinstance(p, T)``, ``callable(p)`` and ``p(...)`` in ``func``'s body.

    Cached: a factory or constructor is called again for every probe. The dict is shared; do not
    change it."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError, ValueError, IndentationError):
        return {}
    definition = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if definition is None:
        return {}
    arguments = definition.args
    params = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    found: dict[str, str] = {}
    for node in ast.walk(definition):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.args and isinstance(node.args[0], ast.Name):
            subject = node.args[0].id
            if node.func.id == "isinstance" and len(node.args) == 2:
                kinds = [_KIND_OF_NAME[n] for n in _type_names(node.args[1]) if n in _KIND_OF_NAME]
                if kinds:
                    found.setdefault(subject, kinds[0])
            elif node.func.id == "callable":
                found.setdefault(subject, "callable")
        if isinstance(node.func, ast.Name):
            found.setdefault(node.func.id, "callable")
    return {name: kind for name, kind in found.items() if name in params}


def make_value(kind: str, probe_function: Any) -> Any:
    """A value of ``kind``: small, finite, and the same every time (rank-1 tensors of length 3)."""
    if kind == "int":
        return 3
    if kind == "float":
        return 0.5
    if kind == "bool":
        return False
    if kind == "callable":
        return probe_function
    import numpy as np

    values = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    if kind == "array":
        return values
    import tensorflow as tf

    return tf.Variable(values) if kind == "variable" else tf.constant(values)
