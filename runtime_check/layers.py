"""Keras specifics, in one adapter: which classes are layers, constructor arguments from a class's
own examples, and the custom gradients a layer reaches only once quantized.

A Keras layer runs its ``_int8_call``/``_int4_call``/``_float8_call`` (or whatever branch tests
``self.quantization_mode``) only after the public ``layer.quantize(mode)`` on a built layer. A
custom gradient in such a place is checked through a layer that is built by one call, quantized
with the mode the source names, and then called: Keras's own protocol, the one a user's layer that
implements ``quantize`` follows too.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# the modes Keras defines, used when Keras does not say (it always does when a layer is imported)
_FALLBACK_MODES = ("int8", "float8", "int4", "gptq", "awq")
_MODE_NAMES = {"quantization_mode", "mode"}
_FENCED = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def is_keras_layer(cls: type) -> bool:
    """A subclass of Keras's ``Layer`` (Keras 3, tf_keras, or TensorFlow's bundled Keras)."""
    for base in inspect.getmro(cls):
        if base.__name__ == "Layer" and base.__module__.startswith(("keras", "tf_keras", "tensorflow")):
            return True
    return False


def keras_modes() -> tuple[str, ...]:
    try:
        from keras.src.dtype_policies.dtype_policy import QUANTIZATION_MODES
    except ImportError:
        return _FALLBACK_MODES
    return tuple(QUANTIZATION_MODES)


# -- which mode reaches a definition ------------------------------------------------------------


def _compared_modes(test: ast.AST) -> set[str]:
    """String literals ``test`` compares with ``quantization_mode``/``mode`` (==, in)."""
    found: set[str] = set()
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or \
                not all(isinstance(op, (ast.Eq, ast.In)) for op in node.ops):
            continue
        operands = [node.left, *node.comparators]
        if not any(_names_mode(o) for o in operands):
            continue
        for operand in operands:
            found.update(_strings(operand))
    return found


def _names_mode(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id in _MODE_NAMES) or \
        (isinstance(node, ast.Attribute) and node.attr in _MODE_NAMES)


def _strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _calls_self(node: ast.AST, method: str) -> bool:
    """``node`` is a call ``self.method(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    return node.func.attr == method and isinstance(owner, ast.Name) and owner.id == "self"


def _class_node(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    scope: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == part), None)
        if found is None:
            return None
        scope = found.body
    return found


def modes_reaching(tree: ast.Module | None, class_qualname: str, method: str,
                   line: int, _seen: frozenset[str] = frozenset()) -> list[str]:
    """The quantization modes under which the definition at ``line`` in ``class_qualname.method``
    runs, in Keras's order; empty when the plain call reaches it (no mode selects it).

    A mode reaches it when the method is named for the mode (Keras's ``quantized_call`` dispatches
    ``"int8"`` to ``_int8_call``), when the definition sits in a branch that tests
    ``quantization_mode`` (or ``mode``) against the mode, when such a branch calls the method, or
    when the method is a helper that only methods a mode reaches call."""
    known = keras_modes()
    named = [m for m in known if re.search(rf"(^|_){re.escape(m)}(_|$)", method)]
    if named:
        return named
    if tree is None:
        return []
    cls = _class_node(tree, class_qualname)
    if cls is None:
        return []
    modes: set[str] = set()
    for node in ast.walk(cls):
        if not isinstance(node, ast.If) or not node.body:
            continue
        compared = _compared_modes(node.test)
        if not compared:
            continue
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        calls_method = any(_calls_self(n, method) for b in node.body for n in ast.walk(b))
        if first <= line <= last or calls_method:
            modes |= compared
    if not modes:
        callers = [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and m.name != method and m.name not in _seen
                   and any(_calls_self(n, method) for n in ast.walk(m))]
        for caller in callers:
            reached = modes_reaching(tree, class_qualname, caller.name, caller.lineno,
                                     _seen | {method})
            if not reached:
                return []  # a plain path calls it too: the layer's own entry reaches it
            modes |= set(reached)
    return [m for m in known if m in modes] + sorted(modes - set(known) - {""}) if modes else []


# -- constructor arguments from the class's own examples ----------------------------------------


def _example_sources(doc: str) -> Iterator[str]:
    for example in doctest.DocTestParser().get_examples(doc):
        yield example.source
    yield from _FENCED.findall(doc)


def documented_arguments(cls: type) -> dict[str, Any] | None:
    """Constructor arguments of the first example in the class's docstring that constructs it
    with literal arguments only (``EinsumDense("ab,bc->ac", output_shape=64, bias_axes="c")``)."""
    doc = inspect.getdoc(cls) or ""
    if cls.__name__ not in doc:
        return None
    try:
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    for source in _example_sources(doc):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name != cls.__name__:
                continue
            try:
                args = [ast.literal_eval(a) for a in node.args]
                kwargs = {k.arg: ast.literal_eval(k.value)
                          for k in node.keywords if k.arg is not None}
                bound = signature.bind_partial(None, *args, **kwargs)
            except (ValueError, TypeError, SyntaxError):
                continue
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(signature.parameters)), None)  # self
            extra = [p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
            for name in extra:  # **kwargs collected by bind: pass them on as keywords
                arguments.update(arguments.pop(name, {}))
            return arguments
    return None


# -- the quantized call ----------------------------------------------------------------------


@contextlib.contextmanager
def _unrecorded() -> Iterator[None]:
    """The building call is not a check: what it records, and the custom gradients it reaches on
    the plain path (checked by the layer's own entry), are dropped."""
    from .issues import RECORDER

    count, calls = RECORDER.call_count, dict(RECORDER.calls)
    with RECORDER.discarding():
        try:
            yield
        finally:
            RECORDER.call_count, RECORDER.calls = count, calls


def quantize_built(layer: Any, mode: str, args: tuple[Any, ...], config: Config | None = None,
                   failure: type[Exception] = RuntimeError) -> Any:
    """``layer``, built by one call on zeros shaped like ``args``, then quantized with ``mode``
    (and ``config``, when given). A ``quantize`` that raises (the mode needs a configuration, or
    the layer refuses it) raises ``failure`` with one line (the caller's "cannot call" error).

    Outside any tape or traced function (``tf.init_scope``): the variables quantization creates
    belong to the layer, not to a trace."""
    import tensorflow as tf

    from .classify import first_line

    with tf.init_scope(), _unrecorded():
        sample = [tf.zeros(a.shape, a.dtype) if tf.is_tensor(a) else a for a in args]
        layer(*sample)
        try:
            if config is None:
                layer.quantize(mode)
            else:
                layer.quantize(mode, config=config.make())
        except Exception as exc:
            text = first_line(str(exc))[:160]
            given = f", config={config.label}" if config is not None else ""
            raise failure(f"{type(layer).__name__}.quantize({mode!r}{given}) raised "
                             f"{type(exc).__name__}{': ' + text if text else ''}") from None
    return layer


class QuantizedLayerCall:
    """Calls a fresh layer from ``build``, quantized with ``mode`` at its first call (when the
    input shapes are known)."""

    def __init__(self, build: Callable[[], Any], mode: str, config: Config | None = None,
                 failure: type[Exception] = RuntimeError) -> None:
        self.build, self.mode, self.config, self.failure = build, mode, config, failure
        self.layer: Any = None

    def __call__(self, *args: Any) -> Any:
        if self.layer is None:
            self.layer = quantize_built(self.build(), self.mode, args, self.config, self.failure)
        return self.layer(*args)


# -- quantization configurations the tests construct ----------------------------------------------


@dataclass(frozen=True)
class Config:
    """A quantization configuration as a test near the module writes it, with literals only."""

    mode: str
    label: str  # as written: Int4QuantizationConfig(block_size=None)
    cls: type
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def make(self) -> Any:
        return self.cls(*self.args, **dict(self.kwargs))


def _imported_names(tree: ast.Module) -> dict[str, tuple[str, str]]:
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def tested_configs(path: str, class_name: str) -> list[Config]:
    """Quantization configurations that the tests near ``path`` mentioning ``class_name``
    construct with literal arguments, other than each mode's default (what ``quantize(mode)``
    uses): Keras's int4 per channel is ``Int4QuantizationConfig(block_size=None)`` in its tests.

    Only classes from modules already imported are considered (nothing is imported for this),
    and only Keras ``QuantizationConfig`` subclasses; each config says its own mode."""
    import sys

    from .inputs.search import test_files

    base: Any = _config_base()
    if base is None:
        return []
    found: dict[tuple[str, str], Config] = {}
    for test in test_files(path, class_name):
        try:
            tree = ast.parse(Path(test).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        imported = _imported_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in imported):
                continue
            module_name, attribute = imported[node.func.id]
            cls: Any = getattr(sys.modules.get(module_name), attribute, None)
            if not (isinstance(cls, type) and issubclass(cls, base)):
                continue
            try:
                args = tuple(ast.literal_eval(a) for a in node.args)
                kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in node.keywords if k.arg)
                if len(kwargs) != len(node.keywords):
                    continue
                config = cls(*args, **dict(kwargs))
                mode = config.mode
                if not isinstance(mode, str) or _same_config(config, _default_config(mode)):
                    continue
                settings = repr(sorted(config.get_config().items()))
            except Exception:  # not constructible from literals alone, or no mode of its own
                continue
            written = [*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs)]
            label = f"{cls.__name__}({', '.join(written)})"
            found.setdefault((cls.__qualname__, settings), Config(mode, label, cls, args, kwargs))
    return list(found.values())


def _config_base() -> type | None:
    try:
        from keras.src.quantizers.quantization_config import QuantizationConfig
    except ImportError:
        return None
    return QuantizationConfig


def _default_config(mode: str) -> Any:
    try:
        from keras.src.quantizers.quantization_config import validate_and_resolve_config

        return validate_and_resolve_config(mode, None)
    except Exception:  # a mode without a default (GPTQ, AWQ)
        return None


def _same_config(config: Any, default: Any) -> bool:
    return default is not None and type(config) is type(default) and \
        config.get_config() == default.get_config()


# -- custom gradients only another Keras backend reaches ----------------------------------------


def _is_tensorflow_backend_test(test: ast.AST, op: type) -> bool:
    """``backend.backend() == "tensorflow"`` (``op`` Eq), or ``!=`` (``op`` NotEq)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op)):
        return False
    sides = [test.left, test.comparators[0]]
    called = any(isinstance(s, ast.Call) and _callee_name(s.func) == "backend" for s in sides)
    return called and any(isinstance(s, ast.Constant) and s.value == "tensorflow" for s in sides)


def _callee_name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _always_returns(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


_Blocks = list[tuple[list[ast.stmt], ast.AST | None]]


def _enclosing_blocks(stmts: list[ast.stmt], line: int) -> _Blocks:
    """The statement lists that hold ``line``, outermost first, each with its owner statement."""
    for stmt in stmts:
        end = stmt.end_lineno or stmt.lineno
        if not stmt.lineno <= line <= end:
            continue
        chain: _Blocks = [(stmts, None)]
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            nested_scope = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if isinstance(inner, list) and inner and not nested_scope:
                found = _enclosing_blocks(inner, line)
                if found:
                    found[0] = (found[0][0], stmt) if name == "body" else (found[0][0], None)
                    return chain + found
        return chain
    return []


def other_backend_only(tree: ast.Module | None, outer: str, line: int) -> str | None:
    """Why the custom gradient defined at ``line`` inside ``outer`` never runs under TensorFlow:
    Keras's multi-backend code returns first for TensorFlow (``if backend.backend() ==
    "tensorflow": ... return``), or defines it only when the backend is not TensorFlow."""
    if tree is None:
        return None
    from .inputs.hints import find_function

    function = find_function(tree, outer)
    if function is None:
        return None
    for block, owner in _enclosing_blocks(function.body, line):
        if isinstance(owner, ast.If) and _is_tensorflow_backend_test(owner.test, ast.NotEq):
            return ("it is defined only when the Keras backend is not TensorFlow "
                    f"(line {owner.lineno})")
        for stmt in block:
            if (stmt.end_lineno or stmt.lineno) >= line:
                break
            if isinstance(stmt, ast.If) and _is_tensorflow_backend_test(stmt.test, ast.Eq) \
                    and _always_returns(stmt.body):
                return (f"it runs only under another Keras backend (line {stmt.lineno} returns "
                        "first when the backend is TensorFlow)")
    return None
