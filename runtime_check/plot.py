"""``--plot DIR``: forward, custom gradient and reference gradient over a 1-D sweep, one PNG each.

Only for entries of one input. The reference is autodiff through the forward's own ops when the
undecorated function is available and differentiable, else a central finite difference (which
assumes the function acts element-wise, as one-input activations do).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

SWEEP = np.linspace(-5.0, 5.0, 201)


def _custom(fn: Any, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = tf.constant(xs)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return np.asarray(y), np.asarray(tape.gradient(y, x))


def _autodiff(raw: Any, xs: np.ndarray) -> np.ndarray | None:
    x = tf.constant(xs)
    try:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y, _ = raw(x)
        grad = tape.gradient(y, x)
    except Exception:
        return None
    return None if grad is None else np.asarray(grad)


def plot_entry(entry: Any, exerciser: Any, plot_dir: str, module_name: str) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .checked import REGISTRY, checked_definition

    fn = entry.make()
    xs = SWEEP.astype("float64")
    try:
        y, custom = _custom(fn, xs)
    except Exception:  # the forward may want float32 or scalars; try those
        try:
            y, custom = _custom(fn, xs.astype("float32"))
        except Exception:
            pairs = [_custom(fn, np.float32(v)) for v in xs]
            y, custom = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    if y.shape != xs.shape or custom.shape != xs.shape:
        return None
    info = checked_definition(fn)
    raw = REGISTRY.get(info.key, (None, None))[1] if info is not None else None
    reference = _autodiff(raw, xs.astype(y.dtype)) if raw is not None else None
    label = "autodiff gradient"
    if reference is None or reference.shape != xs.shape:
        step = 1e-4
        upper, _ = _custom(fn, (xs + step).astype(y.dtype))
        lower, _ = _custom(fn, (xs - step).astype(y.dtype))
        reference, label = (upper - lower) / (2 * step), "numerical gradient"
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(xs, y, label="forward")
    axes.plot(xs, custom, label="custom gradient")
    axes.plot(xs, reference, "--", label=label)
    axes.set_title(f"{module_name}:{entry.qualname}")
    axes.set_xlabel(entry.names[0])
    axes.legend()
    axes.grid(True, alpha=0.3)
    out = Path(plot_dir) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{module_name}.{entry.qualname}") + ".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=80)
    plt.close(figure)
    return str(out)
