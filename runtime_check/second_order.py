"""Opt-in second-order check (``--second-order``), as PyTorch's gradgradcheck does for autograd Functions.

A custom gradient used under a second tape (a Hessian-vector product, a gradient penalty, a
meta-learning step) is differentiated through ``grad``. A ``grad`` that uses ``stop_gradient``,
``tf.numpy_function`` or ops without a registered gradient is a constant to that tape, and the
second-order result is silently wrong (often zero). The check, in float64 on the first input found:

* the directional second derivative ``v . d/dx <g(x), v>`` through ``grad`` (eagerly and traced),
  where ``g`` is the custom gradient for a fixed upstream,
* against a central difference of ``<g(x), v>`` along ``v``,

and reports CG109 when it fails, is NaN/Inf, differs between eager and ``tf.function``, or
disagrees with the central difference. Where the central difference is not finite (a kink, the
edge of the domain) the forward is not twice differentiable there and nothing is reported.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Sequence

import numpy as np
import tensorflow as tf

from .probes import InputSet, as_float64


def _directions(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    out = []
    for k, a in enumerate(arrays):
        n = np.arange(a.size, dtype=np.float64).reshape(a.shape)
        out.append((0.3 + 0.2 * ((n + k) % 4)) * np.where(n % 2 == 0, 1.0, -1.0))
    return out


class SecondOrder:
    def __init__(self, fn: Callable[..., Any], inputs: InputSet) -> None:
        self.fn = fn
        self.probe = as_float64(inputs, [])
        self.positions = [i for i, a in enumerate(self.probe.args)
                          if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        arrays = [self.probe.args[i] for i in self.positions]
        self.v = _directions(arrays)

    def _args(self, tensors: Sequence[Any]) -> list[Any]:
        args = [tf.constant(a) if isinstance(a, np.ndarray) else a for a in self.probe.args]
        for i, t in zip(self.positions, tensors):
            args[i] = t
        return args

    def _gv(self, xs: Sequence[Any]) -> Any:
        """<g(x), v>: the custom gradient (for a fixed upstream) along v."""
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            result = self.fn(*self._args(xs))
        outputs = [t for t in tf.nest.flatten(result) if tf.is_tensor(t) and t.dtype.is_floating]
        upstream = [_upstream(o, i) for i, o in enumerate(outputs)]
        grads = tape.gradient(outputs, list(xs), output_gradients=upstream)
        total = tf.constant(0.0, tf.float64)
        for g, v in zip(grads, self.v):
            if g is not None:
                g = tf.convert_to_tensor(g)
                total += tf.reduce_sum(tf.cast(g, tf.float64) * v)
        return total

    def _second(self, xs: Sequence[Any]) -> Any:
        with tf.GradientTape() as outer:
            outer.watch(list(xs))
            gv = self._gv(xs)
        hv = outer.gradient(gv, list(xs))
        total = tf.constant(0.0, tf.float64)
        for h, v in zip(hv, self.v):
            if h is not None:
                total += tf.reduce_sum(tf.cast(tf.convert_to_tensor(h), tf.float64) * v)
        return total

    def analytic(self, traced: bool) -> float:
        xs = [tf.constant(self.probe.args[i]) for i in self.positions]
        if traced:
            return float(tf.function(lambda *t: self._second(t), reduce_retracing=False)(*xs).numpy())
        return float(self._second(xs).numpy())

    def numeric(self) -> float:
        scale = max([1.0] + [float(np.max(np.abs(self.probe.args[i]))) for i in self.positions if
                             self.probe.args[i].size])
        step = 1e-5 * scale

        def at(sign: float) -> float:
            xs = [tf.constant(self.probe.args[i] + sign * step * v) for i, v in zip(self.positions, self.v)]
            return float(self._gv(xs).numpy())

        return (at(1.0) - at(-1.0)) / (2 * step)


def _upstream(output: Any, index: int) -> Any:
    """A random non-unit upstream (mixed signs, magnitudes in [0.5, 1.5)), as the first-order
    checks use; stateless, so the eager and traced runs get the same one."""
    shape = tf.shape(output)
    magnitude = tf.random.stateless_uniform(shape, seed=[7, index], minval=0.5, maxval=1.5, dtype=tf.float64)
    sign = tf.where(tf.random.stateless_uniform(shape, seed=[8, index], dtype=tf.float64) < 0.5, -1.0, 1.0)
    return tf.cast(magnitude * tf.cast(sign, tf.float64), output.dtype)


def check(fn: Callable[..., Any], inputs: InputSet, record: Callable[[str, str, str], None],
          graph_mode: str = "tf.function") -> None:
    """Record CG109 through ``record(code, message, mode)`` when the custom gradient is not differentiable."""
    probe = SecondOrder(fn, inputs)
    if not probe.positions:
        return
    try:
        numeric = probe.numeric()
    except Exception:
        return  # the first-order gradient itself fails here: other checks report it
    if not np.isfinite(numeric):
        return  # not twice differentiable at this point
    results: dict[str, float] = {}
    for mode, traced in (("eager", False), (graph_mode, True)):
        try:
            results[mode] = probe.analytic(traced)
        except Exception as exc:
            from .classify import classify, describe

            known = classify(exc)
            if known is not None:
                # a failure with a code of its own (`.numpy()` in grad under tf.function is CG010):
                # reported, and silenced, under that code; the other mode is still compared
                record(known[0], f"{known[1]} (when grad is differentiated again)", mode)
                continue
            record("CG109", f"the custom gradient cannot be differentiated again (second order, {mode}): "
                   f"{describe(exc)}", mode)
            return
    for mode, value in results.items():
        if not np.isfinite(value):
            record("CG109", f"the second-order derivative through grad is NaN/Inf where the forward is twice "
                   f"differentiable (central difference {numeric:.6g})", mode)
            return
    if len(results) == 2:
        eager, graph = results["eager"], results[graph_mode]
        if abs(eager - graph) > 1e-6 + 1e-5 * max(abs(eager), abs(graph)):
            record("CG109", f"the second-order derivative through grad differs between eager ({eager:.6g}) and "
                   f"{graph_mode} ({graph:.6g})", f"eager, {graph_mode}")
            return
    if not results:
        return
    value = next(iter(results.values()))
    if abs(value - numeric) > 1e-5 + 1e-3 * max(abs(numeric), abs(value)):
        record("CG109", f"the custom gradient is not differentiable as written: its derivative along the probe "
               f"direction is {value:.6g} through grad but {numeric:.6g} by central difference (grad uses "
               "stop_gradient, .numpy(), NumPy or ops without a gradient; a second tape sees them as constants)",
               ", ".join(results))
