"""A checked drop-in for ``tf.custom_gradient``.

:func:`checked_custom_gradient` keeps TensorFlow's behaviour (it delegates to the original
decorator, keeps ``Bind`` semantics for methods and keeps ``grad_fn``'s ``variables`` signature
faithful so TF's own checks still fire) and adds, per call, the checks TF lacks: the pair
returned by the forward, the upstream arity, the count, shape, dtype and tensor-ness of every
gradient, ``None`` for floating inputs, the ``(input_grads, variable_grads)`` form and NaN/Inf.

Errors TF would raise anyway are raised here first with a clearer message; silent problems are
only recorded (in :data:`runtime_check.issues.RECORDER`), so checked code behaves as before.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.ops import custom_gradient as _tf_custom_gradient_module
from tensorflow.python.util import tf_decorator, tf_inspect

from cg_lint.codes import CG001, CG002, CG003, CG004, CG005, CG006, CG008, CG101, CG102, CG103, CG104, CG105

from .classify import classify, is_graph_only
from .issues import (
    RECORDER,
    CustomGradientCheckError,
    DefInfo,
    check_error,
    definition_identity,
    definition_info,
)

ORIGINAL_CUSTOM_GRADIENT = getattr(
    _tf_custom_gradient_module.custom_gradient, "_cg_original", _tf_custom_gradient_module.custom_gradient
)

# (definition identity, input name) pairs whose forward was seen not to depend on that input:
# by identity, not by the wrapper's location, so functions sharing one wrapper are each measured
_INDEPENDENT: set[tuple[Any, str]] = set()

# the grad function each definition's forward last returned (DefInfo.key -> grad_fn): what the
# upstream checks read the upstream's uses from
GRAD_FUNCTIONS: dict[str, Callable[..., Any]] = {}

# every function decorated since install(): qualname -> (DefInfo, decorated object)
REGISTRY: dict[str, tuple[DefInfo, Any]] = {}

# set by the pytest plugin: called after each successful eager call as
# hook(re-run, args, definition, input names, definition identity): see issues.definition_identity
SHADOW_HOOK: Callable[
    [Callable[..., Any], tuple[Any, ...], DefInfo, list[str], tuple[Any, ...]], None
] | None = None


def current_mode() -> str:
    if tf.executing_eagerly():
        return "eager"
    label = RECORDER.state.mode_label
    # a @tf.function helper called during an eager probe traces: that part is graph mode
    return label if label and label != "eager" else "tf.function"


class InputSpec:
    """Shape/dtype of one flattened positional input as TF will see it."""

    __slots__ = ("name", "shape", "dtype", "value")

    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value = name, value
        self.shape: tf.TensorShape | None = None
        self.dtype: tf.DType | None = None
        try:
            if hasattr(value, "dtype") and hasattr(value, "shape"):
                self.dtype, self.shape = tf.as_dtype(value.dtype), tf.TensorShape(value.shape)
            elif value is not None:
                converted = tf.convert_to_tensor(value)
                self.dtype, self.shape = converted.dtype, converted.shape
        except (TypeError, ValueError):
            pass

    @property
    def floating(self) -> bool:
        return self.dtype is not None and (self.dtype.is_floating or self.dtype.is_complex)

    def describe(self) -> str:
        return describe_type(self.dtype, self.shape)


def describe_type(dtype: tf.DType | None, shape: tf.TensorShape | None) -> str:
    name = dtype.name if dtype is not None else "?"
    if shape is None or shape.rank is None:
        return f"{name}[?]"
    return f"{name}[{','.join('?' if d is None else str(d) for d in shape.as_list())}]"


_HYPER = ("hyper-parameter", "hyperparameter", "hyper parameter")


def hyper_parameter(wrapped: Callable[..., Any], name: str) -> bool:
    """A parameter nobody trains, so None is its right gradient: it has a Python-number default
    (``temperature=0.5``), or the docstring calls it a hyper-parameter on the line naming it."""
    try:
        parameter = inspect.signature(wrapped).parameters.get(name)
    except (TypeError, ValueError):
        parameter = None
    default = None if parameter is None else parameter.default
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return True
    doc = inspect.getdoc(wrapped) or ""
    return any(name in line.replace(",", " ").replace(":", " ").replace("`", " ").split()
               and any(word in line.lower() for word in _HYPER) for line in doc.splitlines())


def _input_names(wrapped: Callable[..., Any], args: Sequence[Any]) -> list[str]:
    """One name per flattened positional argument: the parameter name, ``x[0]`` for nested ones.

    A wrapper that takes ``*args`` (TensorFlow Probability's helper) passes the caller's tensors
    on: those the probe gave by name keep that name (matched by identity), not ``args[0]``."""
    try:
        params = [
            p for p in inspect.signature(wrapped).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for index, arg in enumerate(args):
        if index < len(params) and params[index].kind is not inspect.Parameter.VAR_POSITIONAL:
            base = params[index].name
        elif params and params[-1].kind is inspect.Parameter.VAR_POSITIONAL:
            given = next((n for v, n in RECORDER.state.arg_names if v is arg), None)
            base = given or f"{params[-1].name}[{index - len(params) + 1}]"
        else:
            base = f"arg{index}"
        leaves = tf.nest.flatten(arg)
        names.extend([base] if len(leaves) == 1 else [f"{base}[{i}]" for i in range(len(leaves))])
    return names


def variable_name(variable: Any) -> str:
    """'kernel' for 'dense_3/kernel:0': stable across instances, so repeated probes deduplicate."""
    return str(getattr(variable, "name", "variable")).split("/")[-1].split(":")[0]


def _describe_value(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if tf.is_tensor(value):
        return f"a single tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def _accepts_variables(grad_fn: Callable[..., Any]) -> bool:
    spec = tf_inspect.getfullargspec(grad_fn)
    return "variables" in spec.args or "variables" in spec.kwonlyargs or bool(spec.varkw)


def _all_finite(values: Sequence[Any]) -> bool:
    for value in values:
        if value is None or not tf.is_tensor(value) or not hasattr(value, "numpy"):
            continue  # symbolic tensors (a traced helper) have no values to test
        dtype = tf.as_dtype(value.dtype)  # a Keras variable names its dtype with a string
        if (dtype.is_floating or dtype.is_complex) and not bool(
            np.all(np.isfinite(np.asarray(value.numpy())))
        ):
            return False
    return True


def _not_trained(value: Any) -> bool:
    """A variable passed as an input that no optimizer updates from its gradient: not trainable
    (a quantization scale), or one Keras overwrites with its gradient as a new value, where None
    means "keep it" (float8 scales and amax histories)."""
    return getattr(value, "trainable", True) is False or getattr(value, "overwrite_with_gradient", False) is True


def _is_gradient_value(value: Any) -> bool:
    return tf.is_tensor(value) or isinstance(value, (tf.IndexedSlices, tf.__internal__.CompositeTensor))


def _gradient_shape(value: Any) -> tf.TensorShape | None:
    if isinstance(value, tf.IndexedSlices):
        static = tf.get_static_value(value.dense_shape) if value.dense_shape is not None else None
        return None if static is None else tf.TensorShape(static)
    shape = getattr(value, "shape", None)
    return None if shape is None else tf.TensorShape(shape)


_RANDOM_OP_PARTS = ("Random", "Multinomial", "TruncatedNormal", "Stateful", "RngBitGenerator", "RngReadAndSkip")


def _is_random_op(op_type: str) -> bool:
    return any(part in op_type for part in _RANDOM_OP_PARTS)


def _floats(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [a for a in arrays if a.dtype.kind in "fc"]


def _agree(right: np.ndarray, left: np.ndarray, base: np.ndarray, step: float) -> bool:
    """Two one-sided slopes are one derivative: within 20% of each other, or within what the
    forward's rounding at this step can produce."""
    rounding = 20 * np.finfo(base.dtype).eps * (1 + np.abs(base.astype(np.float64))) / step
    return bool(np.all(np.abs(right - left) <= 0.2 * np.maximum(np.abs(right), np.abs(left)) + rounding))


class _CheckedCall:
    """State of one call of a custom-gradient function: the inputs TF recorded, the forward's outputs."""

    def __init__(self, info: DefInfo, wrapped: Callable[..., Any], args: tuple[Any, ...], mode: str,
                 via: str = "") -> None:
        self.info, self.wrapped, self.mode, self.via = info, wrapped, mode, via
        self.args = args
        self.name = info.qualname
        names = _input_names(wrapped, args)
        self.inputs = [InputSpec(n, v) for n, v in zip(names, tf.nest.flatten(list(args)))]
        self.python_positionals = [
            v for v in tf.nest.flatten(list(args)) if not tf.is_tensor(v) and not hasattr(v, "dtype")
        ]
        self.forward_finite = True
        self.n_outputs = 0

    def record(self, code: str, message: str, subject: str = "") -> None:
        RECORDER.record(self.info, code, f"'{self.name}': {message}", self.mode, subject, self.via)

    # -- forward ---------------------------------------------------------------------------

    def forward(self, *fargs: Any, **fkwargs: Any) -> Any:
        try:
            out = self.wrapped(*fargs, **fkwargs)
        except CustomGradientCheckError:
            raise
        except Exception as exc:
            # raised by the forward's own code, before it returned: whatever the message, not a
            # fault in the (outputs, grad_fn) contract, which is checked below once it returns
            with contextlib.suppress(AttributeError, TypeError):
                exc._cg_in_forward_body = True  # type: ignore[attr-defined]
            self._record_graph_failure(exc, "the forward")
            raise
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            message = (
                f"the forward must return a pair (outputs, grad_fn) but returned {_describe_value(out)}"
            )
            self.record(CG001, message)
            raise check_error(CG001, f"'{self.name}': {message}")
        result, grad_fn = out
        if not callable(grad_fn):
            swapped = " (swapped? the first element is callable)" if callable(result) else ""
            message = (f"the second element returned by the forward is {type(grad_fn).__name__}, "
                       f"not a callable grad_fn{swapped}")
            self.record(CG001, message)
            raise check_error(CG001, f"'{self.name}': {message}")
        flat_result = tf.nest.flatten(result)
        self.n_outputs = len(flat_result)
        if self.mode == "eager":
            self.forward_finite = _all_finite(flat_result) and _all_finite([s.value for s in self.inputs])
        return result, self._checked_grad(grad_fn)

    # -- grad --------------------------------------------------------------------------------

    def _checked_grad(self, grad_fn: Callable[..., Any]) -> Callable[..., Any]:
        GRAD_FUNCTIONS[self.info.key] = grad_fn
        # Keep the signature faithful: TF inspects it for `variables` and must raise as usual.
        if _accepts_variables(grad_fn):
            def checked_grad(*upstreams: Any, variables: Any = None) -> Any:
                return self.grad(grad_fn, upstreams, variables)
        else:
            def checked_grad(*upstreams: Any) -> Any:  # type: ignore[misc]
                return self.grad(grad_fn, upstreams, None)
        checked_grad.__name__ = getattr(grad_fn, "__name__", "grad_fn")
        return checked_grad

    def grad(self, grad_fn: Callable[..., Any], upstreams: tuple[Any, ...], variables: Any) -> Any:
        mode = current_mode()
        self.mode = mode
        self._check_upstream_arity(grad_fn, len(upstreams), variables is not None)
        order: list[int] | None = None
        passed = variables
        if variables is not None and mode == "eager" and len(variables) >= 2:
            # TF's eager order is arbitrary and graph order is name-sorted: hand the grad the
            # reverse of graph order, so a positional (read-order) mistake cannot match both modes
            # and the eager/tf.function comparison exposes it (CG007).
            order = sorted(range(len(variables)), key=lambda i: variables[i].name, reverse=True)
            passed = [variables[i] for i in order]
        try:
            out = grad_fn(*upstreams, variables=passed) if variables is not None else grad_fn(*upstreams)
        except CustomGradientCheckError:
            raise
        except Exception as exc:
            self._record_graph_failure(exc, "grad")
            raise
        if variables is None:
            self._check_input_grads(out, upstreams)
            return out
        input_grads, var_grads = self._check_variable_form(out, len(variables))
        if order is not None:
            restored: list[Any] = [None] * len(variables)
            for position, index in enumerate(order):
                restored[index] = var_grads[position]
            var_grads = restored
        self._check_input_grads(input_grads, upstreams)
        for variable, grad in zip(variables, var_grads):
            self._check_one(grad, variable_name(variable), tf.TensorShape(variable.shape),
                            tf.as_dtype(variable.dtype), "variable", upstreams)
        return input_grads, var_grads

    def _check_upstream_arity(self, grad_fn: Callable[..., Any], count: int, with_variables: bool) -> None:
        try:
            signature = inspect.signature(grad_fn)
        except (TypeError, ValueError):
            return
        try:
            signature.bind(*([None] * count), **({"variables": []} if with_variables else {}))
        except TypeError:
            message = (
                f"grad_fn{signature} cannot take {count} upstream gradient(s), one per flattened output"
            )
            self.record(CG002, message)
            raise check_error(CG002, f"'{self.name}': {message}") from None

    def _check_variable_form(self, out: Any, n_variables: int) -> tuple[Any, list[Any]]:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            message = (
                f"the forward reads {n_variables} variable(s) but grad returns {_describe_value(out)}, "
                "not a pair (input_grads, variable_grads)"
            )
            self.record(CG005, message)
            raise check_error(CG005, f"'{self.name}': {message}")
        input_grads, var_grads = out
        if not isinstance(var_grads, list):
            message = (
                f"variable gradients must be a list, one per variable, not {_describe_value(var_grads)}"
            )
            self.record(CG006, message)
            raise check_error(CG006, f"'{self.name}': {message}")
        if len(var_grads) != n_variables:
            message = f"grad returns {len(var_grads)} variable gradient(s) for {n_variables} variable(s)"
            self.record(CG003, message)
            raise check_error(CG003, f"'{self.name}': {message}")
        return input_grads, var_grads

    def _check_input_grads(self, input_grads: Any, upstreams: tuple[Any, ...]) -> None:
        flat = tf.nest.flatten(input_grads)
        if len(flat) != len(self.inputs):
            names = ", ".join(s.name for s in self.inputs)
            message = f"grad returns {len(flat)} gradient(s) for {len(self.inputs)} input(s) ({names})"
            self.record(CG003, message)
            raise check_error(CG003, f"'{self.name}': {message}")
        for index, (spec, grad) in enumerate(zip(self.inputs, flat)):
            if grad is None:
                # a Python number is not a tensor input in real use, and a parameter the forward
                # does not depend on (a threshold, a gradient-reversal strength) has no gradient
                if spec.floating and tf.is_tensor(spec.value) and not _not_trained(spec.value) \
                        and not hyper_parameter(self.wrapped, spec.name) and not self._independent_of(index, spec):
                    self.record(
                        CG104,
                        f"grad returns None for floating input '{spec.name}' ({spec.describe()}); "
                        "the caller silently gets no gradient",
                        spec.name,
                    )
                continue
            if isinstance(spec.value, (bool, int, float)):
                continue  # a Python number: TF hands its gradient to nobody, whatever its shape
            self._check_one(grad, spec.name, spec.shape, spec.dtype, "input", upstreams)

    def _check_one(self, grad: Any, name: str, shape: tf.TensorShape | None, dtype: tf.DType | None,
                   what: str, upstreams: tuple[Any, ...]) -> None:
        if grad is None:
            return
        if not _is_gradient_value(grad):
            kind = "NumPy array" if isinstance(grad, (np.ndarray, np.generic)) else f"Python {type(grad).__name__}"
            self.record(CG103, f"grad returns a {kind} for {what} '{name}', not a tensor", name)
            return
        got_shape = _gradient_shape(grad)
        if shape is not None and got_shape is not None and not got_shape.is_compatible_with(shape):
            self.record(
                CG101,
                f"gradient for {what} '{name}' has shape {tuple(got_shape.as_list())} but the {what} has shape "
                f"{tuple(shape.as_list())}",
                name,
            )
        got_dtype = tf.as_dtype(grad.dtype)
        if dtype is not None and (dtype.is_floating or dtype.is_complex) and got_dtype != dtype:
            self.record(
                CG102, f"gradient for {what} '{name}' has dtype {got_dtype.name} but the {what} is {dtype.name}", name
            )
        if (
            current_mode() == "eager"
            and tf.is_tensor(grad)
            and self.forward_finite
            and _all_finite(upstreams)
            and not _all_finite([grad])
            and self._smooth_at(name, what)
        ):
            self.record(CG105, f"gradient for {what} '{name}' contains NaN/Inf where the forward is finite", name)

    # -- numeric confirmation (eager only: the forward is called again with one input moved) --------

    def _forward_with(self, index: int, delta: float) -> list[np.ndarray] | None:
        flat = tf.nest.flatten(list(self.args))
        if not (0 <= index < len(flat)) or not hasattr(flat[index], "numpy"):
            return None
        moved = list(flat)
        moved[index] = flat[index] + tf.cast(delta, flat[index].dtype)
        args = tf.nest.pack_sequence_as(list(self.args), moved)
        try:
            with RECORDER.discarding(), tf.GradientTape():
                result, _ = self.wrapped(*args)
        except Exception:
            return None
        return [np.asarray(t.numpy()) for t in tf.nest.flatten(result) if tf.is_tensor(t) and hasattr(t, "numpy")]

    def _step(self, index: int) -> float:
        value = tf.nest.flatten(list(self.args))[index]
        scale = float(np.max(np.abs(np.asarray(value.numpy())))) if hasattr(value, "numpy") else 1.0
        return 1e-3 * max(1.0, scale)

    def _independent_of(self, index: int, spec: InputSpec) -> bool:
        """The forward's outputs do not move when this input does (numeric derivative 0)."""
        key = (definition_identity(self.wrapped), spec.name)
        if key in _INDEPENDENT:
            return True
        if current_mode() != "eager":
            return False
        step = self._step(index)
        # at fixed randomness: a forward that draws random numbers differs from itself anyway
        # (a drop gate's probability moves no output once the draw is fixed)
        plus, minus, base = (self._seeded_forward(index, d) for d in (step, -step, 0.0))
        if plus is None or minus is None or base is None:
            return False
        same = all(a.shape == b.shape and np.array_equal(a, b) for x in (plus, minus) for a, b in zip(x, base))
        if same:
            _INDEPENDENT.add(key)
        return same

    def _seeded_forward(self, index: int, delta: float) -> list[np.ndarray] | None:
        from .seeds import FixedRandomness

        with FixedRandomness(20240) as fixed:  # the same draws every call
            fixed.reset()
            return self._forward_with(index, delta)

    def _smooth_at(self, name: str, what: str) -> bool:
        """Confirm a NaN/Inf gradient numerically, on the forward as it was called (the same
        function and arguments, one input moved at a time). The gradient is a defect only where
        the forward has a derivative:

        - every other floating input can move, to at least one side, with the forward staying
          finite; otherwise the point lies on the edge of the domain in another input (a Gamma
          shape of 0 makes the forward NaN for every nearby probability), where no derivative is;
        - along this input, on each side where the forward is finite, the difference quotients
          settle (steps h and h/10 agree: not ``sqrt`` at 0); where it is finite on both sides the
          two one-sided slopes agree (not ``|z|`` at 0). Finite on one side only is the edge of the
          domain in this input, and the one-sided derivative is what callers see there;
        - the forward draws no random numbers: a sampler's gradient is a reparameterization
          estimate, not the derivative of the forward at fixed randomness, so the difference
          quotients can neither confirm nor refute it.
        """
        if what != "input":
            return True
        names = [s.name for s in self.inputs]
        if name not in names:
            return True
        index = names.index(name)
        step = self._step(index)
        base = self._forward_with(index, 0.0)
        if base is None:
            return False
        slopes = []
        for side in (1.0, -1.0):
            finite, slope = self._one_side(index, base, side, step)
            if finite:
                if slope is None:
                    return False  # finite but not settling: no derivative from this side
                slopes.append(slope)
        if not slopes:
            return False
        if len(slopes) == 2 and not all(
            _agree(right, left, b, step / 10) for right, left, b in zip(*slopes, _floats(base))
        ):
            return False  # a kink: the one-sided derivatives differ
        for other, spec in enumerate(self.inputs):
            if other != index and spec.floating and hasattr(spec.value, "numpy") and \
                    not self._finite_beside(other):
                return False
        return not self._draws_random_numbers()

    def _one_side(self, index: int, base: list[np.ndarray], side: float,
                  step: float) -> tuple[bool, list[np.ndarray] | None]:
        """(the forward is finite on this side, its one-sided slopes if the quotients settle)."""
        far, near = self._forward_with(index, side * step), self._forward_with(index, side * step / 10)
        if far is None or near is None:
            return False, None
        slopes = []
        for b, f, n in zip(base, far, near):
            if b.dtype.kind not in "fc":
                continue
            if not (np.all(np.isfinite(f)) and np.all(np.isfinite(n)) and np.all(np.isfinite(b))):
                return False, None
            slope_far = (f.astype(np.float64) - b) / (side * step)
            slope_near = (n.astype(np.float64) - b) / (side * step / 10)
            tolerance = 0.2 * np.maximum(np.abs(slope_far), np.abs(slope_near)) + 1e-2 * (1 + np.abs(b)) / step
            if not np.all(np.abs(slope_far - slope_near) <= tolerance):
                return True, None
            slopes.append(slope_near)
        return True, slopes

    def _finite_beside(self, index: int) -> bool:
        """The forward stays finite when this input moves a little to one side or the other."""
        step = self._step(index) / 10
        for side in (1.0, -1.0):
            moved = self._forward_with(index, side * step)
            if moved is not None and all(a.dtype.kind not in "fc" or np.all(np.isfinite(a)) for a in moved):
                return True
        return False

    def _draws_random_numbers(self) -> bool:
        """The forward's graph holds a random op (stateful, or stateless with a fixed seed)."""
        flat = tf.nest.flatten(list(self.args))
        positions = [i for i, v in enumerate(flat) if tf.is_tensor(v)]

        def forward_only(*tensors: Any) -> Any:
            moved = list(flat)
            for i, t in zip(positions, tensors):
                moved[i] = t
            result, _ = self.wrapped(*tf.nest.pack_sequence_as(list(self.args), moved))
            return [t for t in tf.nest.flatten(result) if tf.is_tensor(t)]

        specs = [tf.TensorSpec(flat[i].shape, flat[i].dtype) for i in positions]
        try:
            with RECORDER.discarding():
                graph = tf.function(forward_only, autograph=False).get_concrete_function(*specs).graph
            graph_def = graph.as_graph_def()
        except Exception:
            return False
        types = {node.op for node in graph_def.node}
        types.update(node.op for function in graph_def.library.function for node in function.node_def)
        return any(_is_random_op(t) for t in types)

    def _record_graph_failure(self, exc: Exception, where: str) -> None:
        """A failure only graph mode produces (CG009-CG012) is the static rule, confirmed."""
        if self.mode == "eager" and current_mode() == "eager":
            return
        found = classify(exc, self.python_positionals)
        if found is None:
            return
        code, reason = found
        if is_graph_only(code) or code in (CG008, CG004):
            RECORDER.record(
                self.info, code,
                f"'{self.name}': {reason.rstrip('.')} (in {where}; confirmed at runtime under {current_mode()})",
                current_mode(), via=self.via,
            )


def checked_custom_gradient(f: Callable[..., Any] | None = None) -> Any:
    """Drop-in for ``tf.custom_gradient`` that validates every call (see module docstring)."""
    if f is None:
        return lambda f: checked_custom_gradient(f=f)
    info = definition_info(f)
    if info.path is not None and "__autograph_generated" in info.path:
        info = _from_autograph(info)
    REGISTRY.setdefault(info.key, (info, f))

    def decorated(wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return _checked_call(info, wrapped, args, kwargs)

    result = tf_decorator.make_decorator(f, _tf_custom_gradient_module.Bind(f, decorated))
    with contextlib.suppress(AttributeError):  # make_decorator returned a read-only object
        result._cg_checked_definition = info
    return result


checked_custom_gradient._cg_original = ORIGINAL_CUSTOM_GRADIENT  # type: ignore[attr-defined]


_AUTOGRAPH_PREFIX = "outer_factory.<locals>.inner_factory.<locals>."


def _from_autograph(info: DefInfo) -> DefInfo:
    """AutoGraph re-creates nested functions in a generated file: report the user's definition."""
    qualname = info.qualname
    if qualname.startswith(_AUTOGRAPH_PREFIX):
        qualname = qualname[len(_AUTOGRAPH_PREFIX):]
    qualname = ".".join(p[4:] if p.startswith("tf__") else p for p in qualname.split("."))
    for known, _ in REGISTRY.values():
        if known.qualname == qualname and known.path and "__autograph_generated" not in known.path:
            return known
    return DefInfo(qualname, info.module, None, info.line, info.column)


# modules whose frames are decorator machinery between a custom gradient and its caller
_MACHINERY = ("runtime_check.", "tensorflow.python.ops.custom_gradient", "tensorflow.python.util.",
              "tensorflow.python.autograph.", "tensorflow.python.eager.", "tensorflow.python.framework.")


def reached_through(info: DefInfo, frame: Any) -> str:
    """The function a library's inner custom gradient was reached through, as "module:qualname".

    A definition nested in a wrapper or factory (TensorFlow Probability's helper builds
    ``...none_wrapper.<locals>.f_wrapped`` for each decorated function) is shared code: the
    public function tells the user which call it was. Walking out from ``frame``: past the
    decorator machinery and the functions that enclose the definition, the outermost consecutive
    frame of the definition's own package that is not itself a closure (``igammainv``,
    ``Normal.sample``, ``Dense.__call__``: a method by its instance's class). "" when the
    definition is not nested or its caller is outside its package.
    """
    shadow = RECORDER.state.shadow_via
    if shadow is not None and shadow[0] == info.key:  # the plugin's re-run: the original call's answer
        return shadow[1]
    if ".<locals>." not in info.qualname or info.path is None:
        return ""
    package = info.module.split(".")[0]
    enclosing = info.qualname.split(".<locals>.")
    enclosing_names = {".<locals>.".join(enclosing[:i]) for i in range(1, len(enclosing))}
    found = ""
    for _ in range(200):  # bounded: the stack is
        if frame is None:
            break
        code = frame.f_code
        module = str(frame.f_globals.get("__name__", ""))
        qualname = getattr(code, "co_qualname", code.co_name)
        if (module + ".").startswith(_MACHINERY) or "__autograph_generated" in code.co_filename \
                or (code.co_filename == info.path and qualname in enclosing_names):
            frame = frame.f_back
            continue
        if module.split(".")[0] != package or qualname == "<module>":
            break
        if ".<locals>." not in qualname:  # a decorator's closure (Keras's error_handler) is no public name
            found = _as_called(frame, module, qualname)
        frame = frame.f_back
    return found


def _as_called(frame: Any, module: str, qualname: str) -> str:
    """"module:qualname"; a method by the class of its instance (``Dense.__call__`` in Dense's module,
    not the base's ``Operation.__call__``)."""
    owner = frame.f_locals.get("self") if "." in qualname else None
    if owner is None or isinstance(owner, type):
        return f"{module}:{qualname}"
    return f"{type(owner).__module__}:{type(owner).__qualname__}.{frame.f_code.co_name}"


def _checked_call(info: DefInfo, wrapped: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    RECORDER.note_call(info)
    mode = current_mode()
    via = reached_through(info, sys._getframe(1))
    if kwargs:
        consequence = (
            "the keyword tensors get no gradient, or the custom gradient is bypassed entirely"
            if mode == "eager" else "TensorFlow raises ValueError"
        )
        RECORDER.record(
            info, CG008,
            f"'{info.qualname}': called with keyword argument(s) {', '.join(sorted(kwargs))}; {consequence}"
            + ("" if mode == "eager" else f" (confirmed at runtime under {mode})"),
            mode, via=via,
        )
    call = _CheckedCall(info, wrapped, args, mode, via)

    def forward(*fargs: Any, **fkwargs: Any) -> Any:
        return call.forward(*fargs, **fkwargs)

    forward.__name__ = getattr(wrapped, "__name__", "custom_gradient")
    try:
        result = ORIGINAL_CUSTOM_GRADIENT(forward)(*args, **kwargs)
    except TypeError as exc:
        if "must accept keyword argument 'variables'" in str(exc):
            RECORDER.record(
                info, CG004,
                f"'{info.qualname}': the forward reads trainable variables but grad_fn does not accept "
                f"`variables` (confirmed at runtime, {mode})",
                mode, via=via,
            )
        raise
    hook = SHADOW_HOOK
    if hook is not None and mode == "eager" and RECORDER.state.shadow_depth == 0:
        # AutoGraph must not convert the re-run (it would turn the user's `if` into tf.cond).
        again = tf.autograph.experimental.do_not_convert(lambda *a: _checked_call(info, wrapped, a, {}))
        saved, RECORDER.state.shadow_via = RECORDER.state.shadow_via, (info.key, via)
        try:
            hook(again, args, info, _input_names(wrapped, args), definition_identity(wrapped))
        finally:
            RECORDER.state.shadow_via = saved
    return result


# -- installation ------------------------------------------------------------------------------


def install() -> int:
    """Put the checked decorator wherever TF's ``custom_gradient`` is reachable; returns the count.

    Covers ``tf.custom_gradient``, ``tensorflow.python.ops.custom_gradient.custom_gradient`` (what
    ``tf.recompute_grad``, ``tf.grad_pass_through`` and Keras reach internally) and every already
    imported module holding a reference, e.g. ``from tensorflow import custom_gradient``.
    """
    replaced = 0
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("runtime_check"):  # our own reference to the original stays
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is ORIGINAL_CUSTOM_GRADIENT:
                try:
                    setattr(module, name, checked_custom_gradient)
                    replaced += 1
                except (AttributeError, TypeError):
                    pass
    return replaced


def uninstall() -> None:
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("runtime_check"):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is checked_custom_gradient:
                setattr(module, name, ORIGINAL_CUSTOM_GRADIENT)


def checked_definition(obj: Any) -> DefInfo | None:
    """The definition behind a checked decorator object (also through staticmethod/classmethod)."""
    for candidate in (obj, getattr(obj, "__func__", None)):
        info = getattr(candidate, "_cg_checked_definition", None) if candidate is not None else None
        if isinstance(info, DefInfo):
            return info
    return None
