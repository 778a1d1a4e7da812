"""``--plot DIR``: for each exercised function, its custom gradient beside a reference derivative
along a line through the inputs it was checked with, the disagreement marked; one PNG each.

The line is ``x(t) = x0 + t·v`` through the first accepted inputs ``x0`` (all floating inputs move
together, other arguments stay as they were). Along it the picture compares two numbers:

* the custom gradient's directional derivative ``<g(x(t)), v>``, where ``g`` is what grad returns
  for a fixed upstream ``u`` (the not-all-ones one the checks use);
* the same derivative of ``<y(x(t)), u>`` by automatic differentiation through the forward's own
  operations (the undecorated function), or, where that is not available or has no gradient, by a
  central difference along ``t``.

Points where the forward has a kink (its one-sided slopes differ) or is not finite are not compared.
Beside each PNG a small JSON file says what the picture shows; ``plot_summary`` gathers them into
``index.html`` and ``summary.md`` once the run ends. Plotting never records findings: the checks
already ran, and points on the line are not the inputs a finding names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

POINTS = 161  # includes t = 0, the checked inputs themselves
SPAN = 5.0


@dataclass
class Comparison:
    """What one picture shows; written beside it for the summary."""

    module: str
    qualname: str
    image: str
    inputs: str
    reference: str  # "autodiff" | "central difference"
    verdict: str  # "agrees" | "disagrees"
    share: float  # of the compared points that disagree
    max_difference: float
    at: float  # t (or x) of the largest difference
    nonfinite: int  # points where the custom gradient is NaN/Inf and the reference is not
    axis: str


class _Line:
    """The inputs along ``x0 + t·v`` and what is computed there."""

    def __init__(self, fn: Callable[..., Any], args: Sequence[Any]) -> None:
        self.fn = fn
        self.args = list(args)
        self.positions = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        alone = len(self.positions) == 1
        self.v = [_direction(args[i], k, alone) for k, i in enumerate(self.positions)]
        self.upstream: list[np.ndarray] | None = None
        self.wide = True  # float64 arithmetic throughout (set from the outputs)

    def at(self, t: float) -> list[Any]:
        args = [tf.constant(a) if isinstance(a, np.ndarray) else a for a in self.args]
        for i, v in zip(self.positions, self.v):
            args[i] = tf.constant(self.args[i] + t * v)
        return args

    def _outputs(self, result: Any) -> list[Any]:
        outputs = [o for o in tf.nest.flatten(result) if tf.is_tensor(o) and o.dtype.is_floating]
        if self.upstream is None:
            self.upstream = [_upstream(tuple(o.shape), k) for k, o in enumerate(outputs)]
            self.wide = all(o.dtype == tf.float64 for o in outputs)
        return outputs

    def _project(self, outputs: list[Any]) -> float:
        return float(sum(np.sum(np.asarray(o, dtype=np.float64) * u) for o, u in zip(outputs, self.upstream or [])))

    def custom(self, t: float) -> tuple[float, float]:
        """(<y, u>, <g, v>) with grad's own gradient."""
        args = self.at(t)
        xs = [args[i] for i in self.positions]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            outputs = self._outputs(self.fn(*args))
        return self._project(outputs), self._directional(tape, outputs, xs)

    def autodiff(self, raw: Callable[..., Any], t: float) -> float | None:
        """<∇<y, u>, v> through the forward's own operations; None where they give no gradient."""
        args = self.at(t)
        xs = [args[i] for i in self.positions]
        with tf.GradientTape() as tape:
            tape.watch(xs)
            outputs = self._outputs(raw(*args)[0])
        grads = tape.gradient(outputs, xs, output_gradients=self._upstream_tensors(outputs))
        if any(g is None for g in grads):
            return None
        return self._inner(grads, xs)

    def forward(self, t: float) -> float:
        return self._project(self._outputs(self.fn(*self.at(t))))

    def _directional(self, tape: tf.GradientTape, outputs: list[Any], xs: list[Any]) -> float:
        grads = tape.gradient(outputs, xs, output_gradients=self._upstream_tensors(outputs))
        return self._inner([tf.zeros_like(x) if g is None else g for g, x in zip(grads, xs)], xs)

    def _upstream_tensors(self, outputs: list[Any]) -> list[Any]:
        return [tf.constant(u, dtype=o.dtype) for o, u in zip(outputs, self.upstream or [])]

    def _inner(self, grads: Sequence[Any], xs: Sequence[Any]) -> float:
        total = 0.0
        for g, x, v in zip(grads, xs, self.v):
            g = np.asarray(tf.convert_to_tensor(g), dtype=np.float64)
            if g.shape != tuple(x.shape):  # CG101 says so; a picture cannot line them up
                raise ValueError(f"gradient of shape {g.shape} for an input of shape {tuple(x.shape)}")
            total += float(np.sum(g * v))
        return total


def _direction(a: np.ndarray, k: int, alone: bool) -> np.ndarray:
    """1 for the only input, a scalar (the x axis is then the input itself); else mixed signs and
    sizes per element and per input, so that no part of the gradient can hide behind another's
    (and two inputs never move in step, as ``x`` and a threshold compared with it would)."""
    if a.ndim == 0 and alone:
        return np.ones((), dtype=a.dtype)
    n = np.arange(a.size, dtype=np.float64).reshape(a.shape) + 3 * k
    return ((0.3 + 0.2 * (n % 4)) * np.where(n % 2 == 0, 1.0, -1.0)).astype(a.dtype)


def _upstream(shape: tuple[int, ...], k: int) -> np.ndarray:
    """1 for the first element (a scalar function's plain derivative), then 1.25 and 1.5: an
    upstream grad ignores or mixes up shows."""
    n = np.arange(int(np.prod(shape)) if shape else 1).reshape(shape)
    return 1.0 + 0.25 * ((n + k) % 3)


def compare(fn: Callable[..., Any], raw: Callable[..., Any] | None, args: Sequence[Any]) -> dict[str, Any]:
    """Everything the picture shows, as arrays over ``t``."""
    line = _Line(fn, args)
    if not line.positions:
        raise ValueError("no floating-point input to move")
    ts = np.linspace(-SPAN, SPAN, POINTS)
    line.custom(0.0)  # the checked inputs themselves: a failure here is the whole picture's
    wide = line.wide and all(line.args[i].dtype == np.float64 for i in line.positions)
    h = 1e-5 if wide else 1e-2
    use_autodiff = raw is not None and _quietly(line.autodiff, raw, 0.0) is not None
    forward, custom, reference, kink = (np.full(POINTS, np.nan) for _ in range(4))
    for n, t in enumerate(ts):
        here = _quietly(line.custom, t)
        below, above = _quietly(line.forward, t - h), _quietly(line.forward, t + h)
        if here is None or below is None or above is None:
            continue  # outside the forward's domain, or inputs it refuses there
        forward[n], custom[n] = here
        left, right = (forward[n] - below) / h, (above - forward[n]) / h
        kink[n] = abs(left - right) > 1e-2 * max(1.0, abs(left), abs(right)) + (1e-4 if wide else 1e-1)
        auto = _quietly(line.autodiff, raw, t) if use_autodiff and raw is not None else None
        reference[n] = auto if auto is not None else np.nan if use_autodiff else (above - below) / (2 * h)
    scalar = len(line.positions) == 1 and line.args[line.positions[0]].ndim == 0
    axis = ts + float(line.args[line.positions[0]]) if scalar else ts
    return {"axis": axis, "forward": forward, "custom": custom, "reference": reference,
            "kink": (kink == 1.0), "kind": "autodiff" if use_autodiff else "central difference",
            "scalar": scalar, "rtol": (1e-3 if use_autodiff else 1e-2) if wide else 3e-2}


def _quietly(compute: Callable[..., Any], *args: Any) -> Any:
    """``compute(*args)``, or None where the function fails at that point."""
    try:
        return compute(*args)
    except Exception:
        return None


def disagreement(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(points where both are finite and differ, points where only the custom one is not finite,
    the tolerance at each point)."""
    custom, reference = data["custom"], data["reference"]
    usable = np.isfinite(data["forward"]) & np.isfinite(reference) & ~data["kink"]
    scale = max(1.0, float(np.max(np.abs(reference[usable]))) if usable.any() else 1.0)
    both = usable & np.isfinite(custom)
    with np.errstate(invalid="ignore"):
        tolerance = 1e-6 * scale + data["rtol"] * np.fmax(np.abs(custom), np.abs(reference))
        differs = both & (np.abs(custom - reference) > tolerance)
    return differs, usable & ~np.isfinite(custom), tolerance


def plot_entry(entry: Any, exerciser: Any, plot_dir: str, module_name: str) -> str | None:
    """Draw ``entry`` along the line through the inputs it was first checked with; the PNG's path.
    Where no picture can be drawn, the JSON beside where it would be says why."""
    from .checked import REGISTRY, checked_definition
    from .issues import RECORDER
    from .probes import as_float64

    accepted = getattr(exerciser, "first_accepted", None)
    if accepted is None:
        return None
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{module_name}.{entry.qualname}")
    folder = Path(plot_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"module": module_name, "qualname": entry.qualname, "image": None,
                              "inputs": accepted.label, "location": getattr(entry.location, "qualname", entry.qualname)}
    try:
        fn = entry.make()
        info = checked_definition(fn)
        raw = REGISTRY.get(info.key, (None, None))[1] if info is not None else None
        with RECORDER.discarding():  # the checks are done: points on the line are not their inputs
            try:
                probe = as_float64(accepted, exerciser.names)
                data = compare(fn, raw, probe.args)
            except Exception:  # a forward that insists on its own float width
                probe = accepted
                data = compare(fn, raw, probe.args)
        record.update(asdict(draw(data, folder / f"{stem}.png", f"{module_name}:{entry.qualname}", probe.label,
                                  exerciser.names)))
        record.update(module=module_name, qualname=entry.qualname, location=record["location"])
    except Exception as exc:
        from .classify import describe

        record["note"] = f"not drawn: {describe(exc)}"  # the summary says why, not stderr
        return None
    finally:
        (folder / f"{stem}.json").write_text(json.dumps(record), encoding="utf-8")
    return str(folder / f"{stem}.png")


def draw(data: dict[str, Any], out: Path, title: str, inputs: str, names: Sequence[str]) -> Comparison:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, custom, reference = data["axis"], data["custom"], data["reference"]
    differs, nonfinite, tolerance = disagreement(data)
    compared = int(np.count_nonzero(np.isfinite(reference) & np.isfinite(data["forward"]) & ~data["kink"]))
    difference = custom - reference
    gap = np.where(differs, np.abs(difference), 0.0)
    centre = len(x) // 2
    worst = int(np.argmax(gap)) if differs.any() else centre
    share = (int(differs.sum()) + int(nonfinite.sum())) / max(compared, 1)
    bad = differs | nonfinite
    kind = "autodiff" if data["kind"] == "autodiff" else "central difference"
    reference_label = f"{kind} of the forward"
    axis_label = names[0] if data["scalar"] else "t   (inputs = checked inputs + t·v)"
    axis_name = axis_label.split()[0]

    figure, (top, middle, bottom) = plt.subplots(3, 1, figsize=(8, 6.6), sharex=True,
                                                 gridspec_kw={"height_ratios": [1, 2.2, 1.1]})
    if bad.any():
        parts = [f"disagrees with the {reference_label} on {share:.0%} of the line"]
        if differs.any():
            parts.append(f"largest difference {float(gap[worst]):.3g} at {axis_name} = {x[worst]:.3g}")
        if nonfinite.any():
            parts.append(f"NaN/Inf at {int(nonfinite.sum())} points where the forward is finite")
        verdict, colour = "; ".join(parts), "#b00020"
    else:
        verdict, colour = f"agrees with the {reference_label} on the whole line", "#1b7f3b"
    figure.text(0.015, 0.975, title, fontsize=12, fontweight="bold", ha="left", va="top")
    figure.text(0.015, 0.935, "custom gradient " + verdict, color=colour, fontsize=9.5, ha="left", va="top",
                wrap=True)

    for axes in (top, middle, bottom):
        _shade(axes, x, bad)
        axes.axvline(x[centre], color="0.5", linestyle=":", linewidth=1.2)
        axes.grid(True, alpha=0.25)
    top.plot(x, data["forward"], color="0.25", linewidth=1.4)
    top.set_ylabel("forward\n⟨y, u⟩", fontsize=8.5)

    middle.plot(x, reference, color="#ff7f0e", linewidth=3.4, alpha=0.55, label=reference_label)
    middle.plot(x, custom, color="#1f4e99", linewidth=1.5, label="custom gradient (grad)")
    low, high = _limits(custom, reference)
    if nonfinite.any():
        middle.plot(x[nonfinite], np.full(int(nonfinite.sum()), high), "x", color="#b00020", markersize=6,
                    label="custom gradient is NaN/Inf")
    middle.plot([], [], color="0.5", linestyle=":", label="the checked inputs")
    middle.set_ylim(low, high + (0.04 * (high - low) if nonfinite.any() else 0.0))
    middle.set_ylabel("directional derivative\n⟨∂⟨y, u⟩/∂x, v⟩", fontsize=8.5)
    middle.legend(loc="best", fontsize=8, framealpha=0.9)

    band = np.where(np.isfinite(tolerance), tolerance, np.nan)
    bottom.fill_between(x, -band, band, color="0.6", alpha=0.25, linewidth=0, label="tolerance")
    bottom.axhline(0.0, color="0.4", linewidth=0.8)
    bottom.plot(x, difference, color="0.3", linewidth=1.0)
    if differs.any():
        bottom.plot(x[differs], difference[differs], ".", color="#b00020", markersize=4, label="disagrees")
    finite = difference[np.isfinite(difference)]
    reach = max(float(np.max(np.abs(finite))) if finite.size else 0.0,
                float(np.nanmax(band)) if np.isfinite(band).any() else 0.0, 1e-12)
    bottom.set_ylim(-1.25 * reach, 1.25 * reach)
    bottom.set_ylabel("custom − reference", fontsize=8.5)
    bottom.legend(loc="upper right", fontsize=7.5, framealpha=0.9)
    bottom.set_xlabel(axis_label)
    note = f"checked inputs: {inputs}; u: upstream 1, 1.25, 1.5, ... per output element"
    if not data["scalar"]:
        note += "; v: mixed signs and sizes per element"
    figure.text(0.015, 0.008, _clip(note, 140), fontsize=7.5, color="0.35", ha="left")
    figure.subplots_adjust(left=0.13, right=0.98, top=0.87, bottom=0.11, hspace=0.12)
    figure.savefig(out, dpi=100)
    plt.close(figure)
    return Comparison(
        module="", qualname="", image=out.name, inputs=inputs, reference=kind,
        verdict="disagrees" if bad.any() else "agrees", share=round(share, 4),
        max_difference=float(gap[worst]) if differs.any() else 0.0, at=float(x[worst]),
        nonfinite=int(nonfinite.sum()), axis=axis_name,
    )


def _shade(axes: Any, x: np.ndarray, bad: np.ndarray) -> None:
    """Red bands over each run of disagreeing points (half a step either side, so one point shows)."""
    step = (x[1] - x[0]) / 2 if len(x) > 1 else 0.5
    start = None
    for n, flag in enumerate([*bad, False]):
        if flag and start is None:
            start = n
        elif not flag and start is not None:
            axes.axvspan(x[start] - step, x[n - 1] + step, color="#b00020", alpha=0.12, linewidth=0)
            start = None


def _limits(*series: np.ndarray) -> tuple[float, float]:
    """The y range of the curves; one that is nearly flat includes 0, so float noise stays flat."""
    values = np.concatenate([s[np.isfinite(s)] for s in series]) if series else np.zeros(1)
    if not values.size:
        return -1.0, 1.0
    low, high = float(values.min()), float(values.max())
    if high - low < 0.25 * max(abs(low), abs(high)) or high == low:
        low, high = min(low, 0.0), max(high, 0.0)
    pad = 0.08 * (high - low or 1.0)
    return low - pad, high + pad


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
