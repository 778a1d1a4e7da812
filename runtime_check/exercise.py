"""Run one callable on one set of inputs, eagerly and under ``tf.function``, and compare.

The checked decorator does the per-call checks (it is active in both modes); this module adds
what needs both runs or extra calls: probe acceptance, graph-only failures escaping the traced
function, NaN/Inf in traced gradients, eager vs ``tf.function`` agreement (which exposes
variable gradients listed by position), magnitude probes, and the opt-in numerical gradient and
zero-upstream checks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from .checked import _is_random_op, variable_name
from .classify import classify, first_line
from .issues import RECORDER, DefInfo, labels, naming
from .probes import MAGNITUDES, InputSet, as_float64, brief, with_magnitude


@dataclass
class Options:
    jit: bool = False
    numeric: bool = False
    zero_upstream: bool = False
    magnitudes: bool = True
    second_order: bool = False
    broadcast_shapes: bool = False


# set by the worker: told when each probe starts, so the supervisor times probes, not functions
PROGRESS: Callable[[str], None] | None = None


def progress(what: str) -> None:
    if PROGRESS is not None:
        PROGRESS(what)


class Rejected(Exception):
    """The callable does not accept this input (not a defect: try the next one)."""


@dataclass
class Run:
    outputs: list[np.ndarray]
    grads: list[np.ndarray | None]
    names: list[str]  # one per gradient: input names, then variable names
    n_inputs: int
    random: bool = False  # the traced graph draws random numbers (its values differ run to run)


@dataclass
class Outcome:
    used: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def reject(self, why: str) -> None:
        if why not in self.rejected:
            self.rejected.append(why)


def _same(a: Sequence[np.ndarray], b: Sequence[np.ndarray], rtol: float, atol: float) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
                                    for x, y in zip(a, b))


def _to_numpy(value: Any) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _is_float_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc"


def _upstream(output: np.ndarray, index: int, zero: bool = False, random: bool = False) -> np.ndarray:
    """The upstream of the eager and traced runs: not all ones, and the same in every release
    (values in reports depend on it); the checks that judge grad's values use random ones."""
    if zero:
        return np.zeros_like(output)
    if random:
        from .linearity import random_upstreams

        return random_upstreams([output], 100 + index)[0]
    k = np.arange(output.size, dtype=np.float64).reshape(output.shape)
    return (0.6 + 0.3 * ((k + index) % 3)).astype(output.dtype)


def _floating(result: Any) -> list[Any]:
    return [t for t in tf.nest.flatten(result) if tf.is_tensor(t) and (t.dtype.is_floating or t.dtype.is_complex)]


def _finite(arrays: Sequence[np.ndarray | None]) -> bool:
    return all(a is None or a.dtype.kind not in "fc" or bool(np.all(np.isfinite(a))) for a in arrays)


class Exerciser:
    """Probe one entry (a function, a bound method, a layer) with a sequence of input sets."""

    def __init__(self, make_callable: Callable[[], Callable[..., Any]], names: Sequence[str], entry: DefInfo,
                 options: Options) -> None:
        self.make_callable, self.names, self.entry, self.options = make_callable, list(names), entry, options
        self.outcome = Outcome()
        self.first_accepted: InputSet | None = None

    # -- attribution ---------------------------------------------------------------------------

    def target(self) -> DefInfo:
        """Findings of the whole run go on the custom gradient it called, if there was exactly one."""
        called = list(RECORDER.calls.values())
        return called[0] if len(called) == 1 else self.entry

    def record(self, code: str, message: str, mode: str, subject: str = "") -> None:
        target = self.target()
        RECORDER.record(target, code, f"'{target.qualname}': {message}", mode, subject)

    # -- single runs ------------------------------------------------------------------------------

    def _named(self, args: Sequence[Any]) -> tuple[tuple[Any, str], ...]:
        return tuple((a, n) for a, n in zip(args, self.names) if tf.is_tensor(a))

    def _call_args(self, inputs: InputSet) -> list[Any]:
        return [tf.constant(a) if isinstance(a, (np.ndarray, np.generic)) else a for a in inputs.args]

    def eager(self, fn: Callable[..., Any], inputs: InputSet, zero_upstream: bool = False,
              random_upstream: bool = False) -> Run:
        args = self._call_args(inputs)
        watched = [a for a in args if tf.is_tensor(a) and (a.dtype.is_floating or a.dtype.is_complex)]
        calls_before = RECORDER.call_count
        with tf.GradientTape() as tape, naming(self._named(args)):
            for tensor in watched:
                tape.watch(tensor)
            try:
                result = fn(*args)
            except Exception as exc:
                raise _Failed("forward", exc) from exc
        if RECORDER.call_count == calls_before:
            raise Rejected("no custom-gradient function was called")
        outputs = _floating(result)
        if not outputs:
            raise Rejected("no floating-point output")
        variables = [
            v for v in tape.watched_variables() if v.trainable and not any(v is a for a in args)
        ]
        upstream = [_upstream(o.numpy(), i, zero_upstream, random_upstream) for i, o in enumerate(outputs)]
        try:
            grads = tape.gradient(outputs, watched + variables, output_gradients=upstream)
        except Exception as exc:
            raise _Failed("gradient", exc) from exc
        self._variables = variables
        self._upstream = upstream
        names = [n for n, a in zip(self.names, args) if any(a is w for w in watched)]
        return Run([o.numpy() for o in outputs], [_to_numpy(g) for g in grads],
                   names + [variable_name(v) for v in variables], len(watched))

    def traced(self, fn: Callable[..., Any], inputs: InputSet) -> Run:
        args = self._call_args(inputs)
        positions = [i for i, a in enumerate(args) if tf.is_tensor(a)]
        watched_positions = [i for i in positions if args[i].dtype.is_floating or args[i].dtype.is_complex]
        variables, upstream = self._variables, self._upstream

        def body(*tensors: Any) -> Any:
            call_args = list(args)  # Python values stay Python values: graph mode converts them
            for i, t in zip(positions, tensors):
                call_args[i] = t
            watched = [call_args[i] for i in watched_positions]
            with tf.GradientTape() as tape, naming(self._named(call_args)):
                for tensor in watched:
                    tape.watch(tensor)
                result = fn(*call_args)
            outputs = _floating(result)
            grads = tape.gradient(outputs, watched + variables, output_gradients=upstream[: len(outputs)])
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
            return outputs, grads

        function = tf.function(body, jit_compile=self.options.jit or None, reduce_retracing=False)
        tensors = [args[i] for i in positions]
        try:
            outputs, grads = function(*tensors)
        except Exception as exc:
            raise _Failed("tf.function", exc) from exc
        names = [self.names[i] if i < len(self.names) else f"arg{i}" for i in watched_positions]
        return Run([o.numpy() for o in outputs], [_to_numpy(g) for g in grads],
                   names + [variable_name(v) for v in variables], len(watched_positions),
                   _draws_random(function, tensors))

    # -- one input set -----------------------------------------------------------------------------

    def run_set(self, inputs: InputSet, outcome: Outcome, trace: bool = True) -> bool:
        """True when the input was accepted (checked eagerly and, if ``trace``, traced)."""
        graph_mode = "tf.function(jit_compile=True)" if self.options.jit else "tf.function"
        from .discover import CannotCall

        try:
            fn = self.make_callable()
        except CannotCall:
            raise
        except Exception as exc:
            outcome.reject(f"setting up the call raised {type(exc).__name__}")
            return False
        python_args = [a for a in inputs.args if not isinstance(a, np.ndarray)]
        progress(f"eager probe with inputs {inputs.label}")
        with labels(mode="eager", inputs=inputs.label, origin=inputs.origin):
            try:
                eager = self.eager(fn, inputs)
            except Rejected as why:
                outcome.reject(str(why))
                return False
            except _Failed as failure:
                found = _contract_failure(failure, python_args)
                if found is None:
                    outcome.reject(_in_our_words(failure))
                    return False
                self._record_found(found, "eager")
                eager = None
        outcome.used.append(inputs.label)
        if eager is not None and not trace:
            return True
        progress(f"{graph_mode} probe with inputs {inputs.label}")
        if eager is None:
            self._variables, self._upstream = [], []
            with labels(mode=graph_mode, inputs=inputs.label, origin=inputs.origin):
                try:
                    self.traced(fn, inputs)
                except _Failed as failure:
                    found = _contract_failure(failure, python_args)
                    if found is not None:
                        self._record_found(found, graph_mode)
                except Exception:
                    pass
            return True
        with labels(mode=graph_mode, inputs=inputs.label, origin=inputs.origin):
            try:
                graph = self.traced(fn, inputs)
            except _Failed as failure:
                found = _contract_failure(failure, python_args)
                if found is not None:
                    self._record_found(found, graph_mode)
                else:
                    self.record("CG106", f"works eagerly but fails under {graph_mode}: "
                                f"{type(failure.exc).__name__}: {first_line(str(failure.exc))}", graph_mode)
                return True
            self._compare(eager, graph, graph_mode, outcome, lambda: self._again(fn, inputs))
            # NaN/Inf eagerly was confirmed (or dismissed) numerically by the checked decorator
            if _finite(graph.outputs) and _finite([a for a in inputs.args if isinstance(a, np.ndarray)]) \
                    and not _finite(graph.grads) and (_finite(eager.grads) or RECORDER.has(("CG105",))) \
                    and _same(eager.outputs, graph.outputs, 2e-4, 1e-5):  # a different forward: not comparable
                bad = next(n for n, g in zip(graph.names, graph.grads) if not _finite([g]))
                self.record("CG105", f"gradient for '{bad}' contains NaN/Inf where the forward is finite",
                            graph_mode, bad)
        return True

    def _record_found(self, found: tuple[str, str], mode: str) -> None:
        code, reason = found
        if not RECORDER.has((code,)):
            confirmed = "" if mode == "eager" else f" (confirmed at runtime under {mode})"
            self.record(code, f"{reason}{confirmed}", mode)

    def _again(self, fn: Callable[..., Any], inputs: InputSet) -> Run | None:
        """The eager run once more, on the same callable and inputs, recording nothing: does it
        reproduce itself? (No, for random or stateful ops.)"""
        saved = self._variables, self._upstream
        try:
            with RECORDER.discarding():
                return self.eager(fn, inputs)
        except Exception:
            return None
        finally:
            self._variables, self._upstream = saved

    def _compare(self, eager: Run, graph: Run, graph_mode: str, outcome: Outcome | None = None,
                 again: Callable[[], Run | None] | None = None) -> None:
        float64 = all(g is None or g.dtype != np.float32 for g in eager.grads)
        rtol, atol = (1e-7, 1e-9) if float64 else (2e-4, 1e-5)
        if self.options.jit:
            rtol, atol = max(rtol, 1e-3), max(atol, 1e-4)
        rerun = _Lazy(None if graph.random else again)
        if not _same(eager.outputs, graph.outputs, rtol, atol):
            repeated = rerun.get()
            if repeated is not None and _same(eager.outputs, repeated.outputs, rtol, atol):
                # the eager forward reproduces itself, the traced one does not: no random op,
                # the math depends on the mode (a `tf.executing_eagerly()` branch)
                index = next(i for i, (a, b) in enumerate(zip(eager.outputs, graph.outputs))
                             if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
                self.record("CG106", f"eager and {graph_mode} forwards differ (output {index}: "
                            f"{brief(eager.outputs[index])} vs {brief(graph.outputs[index])}), and the eager "
                            "one is the same when run again: code that depends on the mode (such as a "
                            "`tf.executing_eagerly()` branch) changes the math", f"eager, {graph_mode}")
            elif outcome is not None:
                # stateful random ops: different forwards have different gradients, not a defect
                outcome.notes.append("eager and traced forwards differ (random or stateful ops), "
                                     "so their gradients were not compared")
            return
        differing = []
        for index, (a, b) in enumerate(zip(eager.grads, graph.grads)):
            if (a is None) != (b is None):
                differing.append((index, "None" if a is None else "a tensor", "None" if b is None else "a tensor"))
            elif a is not None and b is not None and (
                    a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)):
                differing.append((index, brief(a), brief(b)))
        if not differing:
            return
        repeated = rerun.get()
        if graph.random or repeated is not None and not _same([g for g in eager.grads if g is not None],
                                              [g for g in repeated.grads if g is not None], rtol, atol):
            if outcome is not None:  # grad draws random numbers: two eager runs differ too
                outcome.notes.append("eager gradients differ between two runs (random ops in grad), "
                                     "so eager and traced gradients were not compared")
            return
        first_index, in_eager, in_graph = differing[0]
        name = eager.names[first_index]
        if all(i >= eager.n_inputs for i, _, _ in differing) and len(eager.names) - eager.n_inputs >= 2:
            self.record(
                "CG007",
                f"variable gradients differ between eager and {graph_mode} ('{name}': {in_eager} vs {in_graph}): "
                "they are listed by position, but the order of `variables` is arbitrary; match them by identity "
                "(confirmed at runtime)",
                f"eager, {graph_mode}",
            )
        else:
            self.record("CG106", f"eager and {graph_mode} gradients differ for '{name}': {in_eager} vs {in_graph}",
                        f"eager, {graph_mode}", name)

    # -- extra probes ------------------------------------------------------------------------------

    def magnitude_probes(self, accepted: InputSet) -> None:
        progress("NaN/Inf magnitude probes")
        for value in MAGNITUDES:
            probe = with_magnitude(accepted, self.names, value)
            with labels(mode="eager", inputs=probe.label, origin=probe.origin):
                try:
                    self.eager(self.make_callable(), probe)
                except Exception:
                    continue

    def numeric_check(self, accepted: InputSet) -> None:
        progress("numerical gradient check")
        probe = as_float64(accepted, self.names)
        fn = self.make_callable()
        with labels(mode="eager", inputs=probe.label, origin=probe.origin):
            try:
                run = self.eager(fn, probe, random_upstream=True)
            except Exception:
                return
            arrays = [a for a in probe.args if _is_float_array(a)]
            grads = run.grads[: run.n_inputs]
            rng = np.random.default_rng(7)
            # an input whose gradient has another shape (CG101 says so) is held still: the
            # directional derivative along it is not defined, the others' still are
            directions = [rng.standard_normal(a.shape) if g is None or g.shape == a.shape else np.zeros(a.shape)
                          for a, g in zip(arrays, grads)]
            analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, directions)
                           if g is not None and g.shape == d.shape)
            scale = max([1.0] + [float(np.max(np.abs(a))) for a in arrays if a.size])
            step = 1e-6 * scale

            def weighted_output(sign: float) -> float:
                moved, k = [], 0
                for a in probe.args:
                    if _is_float_array(a):
                        moved.append(tf.constant(a + sign * step * directions[k]))
                        k += 1
                    else:
                        moved.append(a)
                result = fn(*moved)
                outputs = [t for t in tf.nest.flatten(result) if tf.is_tensor(t) and t.dtype.is_floating]
                return sum(float(np.sum(o.numpy() * u)) for o, u in zip(outputs, self._upstream))

            try:
                numeric = (weighted_output(1.0) - weighted_output(-1.0)) / (2 * step)
            except Exception:
                return
            if not np.isfinite(numeric) or not np.isfinite(analytic):
                return
            if abs(analytic - numeric) > 1e-5 + 1e-4 * max(abs(numeric), abs(analytic)):
                self.record("CG107", f"custom gradient disagrees with the numerical gradient on {probe.label}: "
                            f"directional derivative {analytic:.6g} vs numerical {numeric:.6g}", "eager")

    def upstream_check(self, accepted: InputSet, outcome: Outcome) -> None:
        """CG110: grad is linear in its upstream (see linearity.py)."""
        from . import linearity

        progress("upstream linearity check")
        with labels(mode="eager", inputs=accepted.label, origin=accepted.origin):
            try:
                fn = self.make_callable()
                args = self._call_args(accepted)
                watched = [a for a in args if tf.is_tensor(a) and (a.dtype.is_floating or a.dtype.is_complex)]
                names = [n for n, a in zip(self.names, args) if any(a is w for w in watched)]
                keys = [info.key for info in RECORDER.calls.values()]
                with naming(self._named(args)):
                    verdict = linearity.check(fn, args, names, watched, keys)
            except Exception:
                return  # the runs before showed whatever fails here
            if verdict.code:
                self.record(verdict.code, verdict.message, "eager")
            elif verdict.note:
                outcome.notes.append(verdict.note)

    def zero_upstream_check(self, accepted: InputSet) -> None:
        progress("zero-upstream probe")
        with labels(mode="eager", inputs=accepted.label, origin=accepted.origin):
            try:
                run = self.eager(self.make_callable(), accepted, zero_upstream=True)
            except Exception:
                return
        for name, grad in zip(run.names, run.grads):
            if grad is not None and np.any(grad != 0):
                self.record("CG108", f"with a zero upstream gradient, grad still returns non-zero values for '{name}' "
                            "(it does not multiply by its upstream)", "eager", name)
                return

    # -- the whole entry ---------------------------------------------------------------------------

    def run(self, input_sets: Sequence[InputSet]) -> Outcome:
        outcome = self.outcome = Outcome()  # kept: what ran before an internal error is still reported
        first_accepted: InputSet | None = None
        traced: set[tuple[Any, ...]] = set()
        for inputs in input_sets:
            kind = trace_class(inputs)
            # Tracing is most of a probe's cost, and what it can expose (graph-only failures,
            # eager vs traced differences) depends on ranks and dtype kinds, not on the exact
            # shapes or float widths: one traced run per class. Declared inputs are all traced;
            # a parameter broadcast as a bias is ("applied") is checked for its gradient's shape,
            # which the eager run shows.
            trace = inputs.source == "config" or (inputs.source != "applied" and kind not in traced)
            # a call nothing in the project makes: its shape findings are opt-in (CG111)
            made_up = _MADE_UP if self.options.broadcast_shapes else _MADE_UP_SILENT
            with RECORDER.renaming(made_up if inputs.source == "applied" else {}):
                accepted = self.run_set(inputs, outcome, trace)
            if accepted:
                if first_accepted is None:
                    first_accepted = inputs
                if trace:
                    traced.add(kind)
            if RECORDER.has(("CG001", "CG002", "CG004", "CG005", "CG006")):
                break  # the contract is broken for every input; more probes only repeat it
        self.first_accepted = first_accepted  # where --plot draws its line through
        if first_accepted is not None:
            self.upstream_check(first_accepted, outcome)
            if self.options.magnitudes:
                self.magnitude_probes(first_accepted)
            if self.options.numeric:
                self.numeric_check(first_accepted)
            if self.options.zero_upstream:
                self.zero_upstream_check(first_accepted)
            if self.options.second_order:
                self.second_order_check(first_accepted)
        return outcome

    def second_order_check(self, accepted: InputSet) -> None:
        progress("second-order check")
        from . import second_order

        graph_mode = "tf.function(jit_compile=True)" if self.options.jit else "tf.function"
        try:
            fn = self.make_callable()
        except Exception:
            return
        with labels(mode="eager", inputs=as_float64(accepted, self.names).label,
                    origin=accepted.origin):
            second_order.check(fn, accepted, lambda code, message, mode: self.record(code, message, mode),
                               graph_mode)


# a gradient's shape seen only on inputs the search made up by broadcasting a parameter
_MADE_UP = {"CG101": ("CG111", " (only with a parameter broadcast over the data as a bias or scale is, which no call "
                               "site, test or configuration shows)")}
_MADE_UP_SILENT = {"CG101": ("", "")}  # without --broadcast-shapes: not recorded


def trace_class(inputs: InputSet) -> tuple[Any, ...]:
    """What a traced run depends on: each argument's rank and dtype kind, or its Python value."""
    return tuple(
        ("array", a.ndim, a.dtype.kind) if isinstance(a, np.ndarray) else ("python", repr(a))
        for a in inputs.args
    )


# what TensorFlow says when the forward's result or grad's result breaks the contract: raised from
# inside the forward's own code instead (a helper inspecting a callable, a nested unpacking), the
# same words are about that code and its inputs, e.g. a probe's filler where a function was wanted
_RESULT_CODES = ("CG001", "CG003")


def _contract_failure(failure: _Failed, python_args: Sequence[Any]) -> tuple[str, str] | None:
    """classify(), except that a result-contract code raised inside the forward body is no finding."""
    found = classify(failure.exc, python_args)
    if found is not None and found[0] in _RESULT_CODES and getattr(failure.exc, "_cg_in_forward_body", False):
        return None
    return found


def _in_our_words(failure: _Failed) -> str:
    from .inputs.repair import short_reason

    reason = short_reason(failure.exc)
    if failure.where == "forward":
        return reason
    return f"the {failure.where} failed on inputs the forward accepts ({type(failure.exc).__name__})"


class _Failed(Exception):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__(where)
        self.where, self.exc = where, exc


def _draws_random(function: Any, tensors: Sequence[Any]) -> bool:
    """Does the traced graph (its functions included) hold a random op that is not seeded
    statelessly? A small random output (a scalar dropout mask) can repeat by chance, so this is
    read from the graph rather than from two runs."""
    try:
        graph_def = function.get_concrete_function(*tensors).graph.as_graph_def()
    except Exception:
        return False
    types = {node.op for node in graph_def.node}
    types.update(node.op for f in graph_def.library.function for node in f.node_def)
    return any(_is_random_op(t) and not t.startswith("Stateless") for t in types)


class _Lazy:
    """The eager re-run, made at most once and only when a comparison needs it."""

    def __init__(self, make: Callable[[], Run | None] | None) -> None:
        self.make, self.done = make, False
        self.value: Run | None = None

    def get(self) -> Run | None:
        if not self.done and self.make is not None:
            self.done, self.value = True, self.make()
        return self.value


def _test_origin() -> str:
    """'from the test tests/test_ops.py::test_x', from the test pytest is running now."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    return f"from the test {current}" if current else "from a test's call"


def shadow_check(decorated: Callable[..., Any], args: tuple[Any, ...], info: DefInfo, names: Sequence[str],
                 options: Options) -> None:
    """For the pytest plugin: re-run one real eager call eagerly and traced, and compare."""
    if not all((tf.is_tensor(a) and not isinstance(a, tf.Variable)) or isinstance(a, (int, float, bool, np.ndarray))
               for a in args):
        return  # nested, variable or exotic arguments: the real call itself was checked already
    from .probes import label_for

    # Copies as new constants: an outer tape of the user's test does not watch them, so the
    # re-run leaves the user's gradients alone.
    arrays = [np.asarray(a.numpy()) if tf.is_tensor(a) else a for a in args]
    names = list(names)[: len(arrays)] + [f"arg{i}" for i in range(len(names), len(arrays))]
    exerciser = Exerciser(lambda: decorated, names, info, Options(jit=options.jit, magnitudes=False))
    RECORDER.state.shadow_depth += 1
    try:
        exerciser.run_set(InputSet(arrays, label_for(names, arrays), "call", origin=_test_origin()), Outcome())
    finally:
        RECORDER.state.shadow_depth -= 1
