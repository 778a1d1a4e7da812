"""Is grad linear in its upstream? grad(a*u1 + b*u2) == a*grad(u1) + b*grad(u2).

Every vector-Jacobian product is, and so are surrogates (straight-through, gradient reversal): they
scale the upstream by something that does not depend on it. A grad that ignores its upstream,
assumes it is one, or adds a term that does not scale with it (``dy - 1``) is not, and a
``reduce_sum`` loss (a unit upstream) never shows it. One forward on a persistent tape, then a
few backward passes with random, non-unit upstreams (eagerly; the traced run compares against
the eager one elsewhere).

A grad that does not repeat itself exactly, and any finding, is judged again with every pass at
the same fixed randomness (the seed reset before it): noise or a mask drawn in grad then scales
the upstream by the same draw each time, and is linear. Not reported: a grad that draws random
numbers and is not linear at fixed randomness (noise added to the gradient; it changes with the
seed), or whose randomness no seed fixes (two passes differ exactly), one
that clips its upstream (recognised in its source, and linear once the upstream is small enough
that clipping is inactive), one that normalises it (recognised in its source). A grad whose result
does not depend on the upstream at all is reported whatever its source says, unless it is random.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import tensorflow as tf

from cg_lint.api import CLIP, NORMALISE, grad_upstream_uses

from .checked import GRAD_FUNCTIONS, variable_name
from .issues import RECORDER
from .seeds import FixedRandomness

# the combination's weights: not 1, not -1, and a + b != 1, so a constant term cannot cancel
A, B = 0.7, -1.3
SMALL = (1e-3, 1e-6)  # upstream scales under which a clipping grad clips nothing
SEED = 20250  # every pass's randomness
OTHER_SEEDS = (1, 2, 3, 5, 8, 13, 21, 34)  # is grad random? 8 tries: a coin drawn in grad repeats 1 in 256


def random_upstreams(outputs: Sequence[np.ndarray], seed: int) -> list[np.ndarray]:
    """One upstream per output: mixed signs, magnitudes in [0.5, 1.5), never all ones."""
    rng = np.random.default_rng(seed)
    out = []
    for o in outputs:
        magnitude = rng.uniform(0.5, 1.5, o.shape)
        sign = np.where(rng.random(o.shape) < 0.5, -1.0, 1.0)
        out.append((magnitude * sign).astype(o.dtype))
    return out


@dataclass
class Verdict:
    code: str  # "" when nothing is reported
    message: str = ""
    note: str = ""  # why nothing is reported, when that needs saying


class _Backward:
    """Backward passes of one recorded forward, for any upstream."""

    def __init__(self, tape: tf.GradientTape, outputs: list[Any], sources: list[Any]) -> None:
        self.tape, self.outputs, self.sources = tape, outputs, sources

    def __call__(self, upstream: Sequence[np.ndarray]) -> list[np.ndarray | None]:
        with RECORDER.discarding():  # the per-call checks ran already, on the same inputs
            grads = self.tape.gradient(self.outputs, self.sources,
                                       output_gradients=[tf.constant(u) for u in upstream])
        out: list[np.ndarray | None] = []
        for g in grads:
            if isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            out.append(None if g is None or not hasattr(g, "numpy") else np.asarray(g.numpy()))
        return out


def _close(a: Sequence[np.ndarray | None], b: Sequence[np.ndarray | None], scale: Sequence[np.ndarray | None],
           rtol: float) -> bool:
    for x, y, s in zip(a, b, scale):
        if (x is None) != (y is None):
            return False
        if x is None or y is None or s is None:
            continue
        if x.shape != y.shape or x.dtype.kind not in "fc":
            continue  # a wrong shape is CG101's; integer gradients are nobody's
        # where a gradient is NaN or Inf (an input outside the forward's domain) linearity says
        # nothing: that is CG105's, on inputs where the forward is finite
        finite = np.isfinite(x) & np.isfinite(y) & np.isfinite(s)
        magnitude = np.abs(np.where(finite, s, 0.0))
        bound = rtol * (magnitude + float(np.max(magnitude, initial=0.0))) + 1e-6
        if not np.all(np.abs(np.where(finite, x - y, 0.0)) <= bound):
            return False
    return True


def _combined(g1: Sequence[np.ndarray | None], g2: Sequence[np.ndarray | None]) -> tuple[list[Any], list[Any]]:
    """a*g1 + b*g2, and the magnitude it is compared at (|a*g1| + |b*g2|)."""
    value: list[Any] = []
    scale: list[Any] = []
    for x, y in zip(g1, g2):
        if x is None or y is None or x.shape != y.shape or x.dtype.kind not in "fc":
            value.append(x)
            scale.append(None)
        else:
            value.append(A * x.astype(np.float64) + B * y.astype(np.float64))
            scale.append(np.abs(A * x.astype(np.float64)) + np.abs(B * y.astype(np.float64)))
    return value, scale


def _nonzero(grads: Sequence[np.ndarray | None]) -> bool:
    return any(g is not None and g.dtype.kind in "fc" and bool(np.any((g != 0) & np.isfinite(g))) for g in grads)


def judge(backward: Callable[[Sequence[np.ndarray]], list[np.ndarray | None]], outputs: Sequence[np.ndarray],
          names: Sequence[str], flow: frozenset[str], float64: bool) -> Verdict:
    """Randomness is told apart by exact repeats, never by a tolerance: two draws of one scalar
    can agree to 1e-4 by chance (about once in 700 runs), and a mask drawn in grad repeats
    itself half the time. A grad that repeats itself is judged as it is; one that does not, and
    any finding, is judged again with every pass at the same fixed randomness (the seed reset
    before it), where noise or a mask that scales the upstream is linear whatever it draws."""
    u1 = random_upstreams(outputs, 11)
    g1 = backward(u1)
    if _identical(backward(u1), g1):
        verdict = _judge_at_fixed_randomness(backward, outputs, names, flow, float64, u1, g1)
        if not verdict.code:
            return verdict  # resets of the seed cost a kernel cache each: only where needed
    with FixedRandomness(SEED) as fixed:
        def at_seed(upstream: Sequence[np.ndarray]) -> list[np.ndarray | None]:
            fixed.reset()
            return backward(upstream)

        g1 = at_seed(u1)
        if not _identical(at_seed(u1), g1):
            return Verdict("", note="grad draws random numbers a seed does not fix (two passes with the same "
                                    "upstream and seed differ): its linearity in the upstream was not checked")
        verdict = _judge_at_fixed_randomness(at_seed, outputs, names, flow, float64, u1, g1)
        if verdict.code and _draws_random_numbers(backward, u1, g1):
            return Verdict("", note="grad draws random numbers and is not linear in its upstream at fixed "
                                    "randomness (noise added to the gradient, not scaled by the upstream): left out")
    return verdict


def _identical(a: Sequence[np.ndarray | None], b: Sequence[np.ndarray | None]) -> bool:
    return len(a) == len(b) and all(
        (x is None) == (y is None) and (x is None or y is None or (
            x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")))
        for x, y in zip(a, b))


def _draws_random_numbers(backward: Callable[[Sequence[np.ndarray]], list[np.ndarray | None]],
                          u1: Sequence[np.ndarray], g1: Sequence[np.ndarray | None]) -> bool:
    """Does grad change with the seed? Several seeds: a draw from a few values (a sign, a mask)
    can repeat under one other seed."""
    for seed in OTHER_SEEDS:
        with FixedRandomness(seed) as fixed:
            fixed.reset()
            if not _identical(backward(u1), g1):
                return True
    return False


def _judge_at_fixed_randomness(backward: Callable[[Sequence[np.ndarray]], list[np.ndarray | None]],
                               outputs: Sequence[np.ndarray], names: Sequence[str], flow: frozenset[str],
                               float64: bool, u1: Sequence[np.ndarray], g1: Sequence[np.ndarray | None]) -> Verdict:
    rtol = 1e-9 if float64 else 2e-4
    u2 = random_upstreams(outputs, 12)
    g2 = backward(u2)
    if _nonzero(g1) and _close(g2, g1, g1, rtol):
        name = next(n for n, g in zip(names, g1) if _nonzero([g]))
        return Verdict("CG110", f"grad does not depend on its upstream gradient: it returns the same gradient for "
                                f"'{name}' whatever the upstream (it assumes an upstream of one, or forgets to "
                                "multiply by it)")
    if _linear(backward, u1, u2, g1, g2, rtol):
        return Verdict("")
    if NORMALISE in flow:
        return Verdict("", note="grad normalises its upstream (read in its source): not linear on purpose")
    if CLIP in flow:
        for scale in SMALL:
            small1, small2 = [u * scale for u in u1], [u * scale for u in u2]
            if _linear(backward, small1, small2, backward(small1), backward(small2), rtol):
                return Verdict("", note=f"grad clips its upstream (read in its source): linear for upstreams "
                                        f"scaled by {scale:g}")
    got = backward([(A * a + B * b).astype(a.dtype) for a, b in zip(u1, u2)])
    want, _ = _combined(g1, g2)
    name, shown = _first_difference(names, got, want)
    return Verdict("CG110", f"grad is not linear in its upstream gradient: for '{name}', grad({A:g}*u1 {B:+g}*u2) is "
                            f"{shown[0]} but {A:g}*grad(u1) {B:+g}*grad(u2) is {shown[1]} (random upstreams u1, u2; "
                            "a constant term, an upstream of one assumed, or the upstream used non-linearly)")


def _linear(backward: Callable[[Sequence[np.ndarray]], list[np.ndarray | None]], u1: Sequence[np.ndarray],
            u2: Sequence[np.ndarray], g1: Sequence[np.ndarray | None], g2: Sequence[np.ndarray | None],
            rtol: float) -> bool:
    combined = [(A * a + B * b).astype(a.dtype) for a, b in zip(u1, u2)]
    want, magnitude = _combined(g1, g2)
    return _close(backward(combined), want, magnitude, rtol)


def _first_difference(names: Sequence[str], got: Sequence[np.ndarray | None], want: Sequence[Any]
                      ) -> tuple[str, tuple[str, str]]:
    from .probes import brief

    for name, x, y in zip(names, got, want):
        if x is None or y is None:
            if (x is None) != (y is None):
                return name, ("None" if x is None else brief(x), "None" if y is None else brief(y))
            continue
        if x.shape == y.shape and not np.allclose(x, y, rtol=1e-3, atol=1e-5, equal_nan=True):
            return name, (brief(x), brief(np.asarray(y, dtype=x.dtype)))
    name = names[0] if names else "?"
    return name, ("a different value", "another")


def upstream_flow(grad_fn: Callable[..., Any]) -> frozenset[str]:
    """What ``grad_fn`` does with its upstream on purpose (``CLIP``, ``NORMALISE``), as cg-lint's
    model reads its source; empty when its source cannot be found."""
    raw = inspect.unwrap(getattr(grad_fn, "__func__", grad_fn))
    code = getattr(raw, "__code__", None)
    path = inspect.getsourcefile(raw) if code is not None else None
    if code is None or path is None:
        return frozenset()
    return _flow_in(path, code.co_firstlineno, code.co_name)


@lru_cache(maxsize=256)
def _flow_in(path: str, line: int, name: str) -> frozenset[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
    except (OSError, UnicodeDecodeError):
        return frozenset()
    return grad_upstream_uses(source, path, line, name)


def check(fn: Callable[..., Any], args: list[Any], names: Sequence[str], watched: list[Any],
          grad_keys: Sequence[str]) -> Verdict:
    """Run the forward once on ``args`` (tensors already; ``names`` those of ``watched``), then
    judge its grad's linearity, input and variable gradients alike."""
    with tf.GradientTape(persistent=True) as tape:
        for tensor in watched:
            tape.watch(tensor)
        with RECORDER.discarding():
            result = fn(*args)
    outputs = [t for t in tf.nest.flatten(result) if tf.is_tensor(t) and (t.dtype.is_floating or t.dtype.is_complex)]
    if not outputs:
        return Verdict("")
    variables = [v for v in tape.watched_variables() if v.trainable and not any(v is a for a in args)]
    sources = watched + variables
    names = [*names, *(variable_name(v) for v in variables)]
    # what the upstream flows into, in every grad the forward reached
    flow: frozenset[str] = frozenset()
    for key in grad_keys:
        grad_fn = GRAD_FUNCTIONS.get(key)
        if grad_fn is not None:
            flow |= upstream_flow(grad_fn)
    float64 = all(o.dtype == tf.float64 for o in outputs)
    try:
        return judge(_Backward(tape, outputs, sources), [o.numpy() for o in outputs], names, flow, float64)
    finally:
        del tape
