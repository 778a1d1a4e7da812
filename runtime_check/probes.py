"""Inputs for a function nobody told us how to call: synthesized probes.

Several shapes (a function correct on scalars can be wrong on vectors), both float widths, and
values that are neither ones nor zeros (so a gradient that ignores its input or its upstream
cannot look right by accident). Magnitude probes (±100, 0) look for NaN/Inf gradients.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any

import numpy as np

# (dtype name, shape) in the order they are tried
PROBE_TYPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("float32", ()),
    ("float32", (3,)),
    ("float32", (2, 3)),
    ("float64", ()),
    ("float64", (3,)),
    ("float64", (2, 3)),
)

MAGNITUDES: tuple[float, ...] = (100.0, -100.0, 0.0)


@dataclass
class InputSet:
    """Positional arguments for one call, and how the report names them."""

    args: list[Any]
    label: str
    source: str = "probe"  # "probe" | "config" | "discovered" | "applied" | "call"
    extra: dict[str, Any] = field(default_factory=dict)
    # how they were chosen, as findings say it: "from the call at ops.py:12", "guessed", ...
    origin: str = "guessed"


def describe_array(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype.name}[{','.join(str(d) for d in value.shape)}]"
    if callable(value):
        return f"a function ({getattr(value, '__name__', 'callable')})"
    if isinstance(value, list) and value and isinstance(value[0], (list, float)):
        shape = np.shape(value)  # a nested list of numbers, as a filter kernel is written
        return f"a list [{','.join(str(d) for d in shape)}]"
    return repr(value)


def probe_array(dtype: str, shape: Sequence[int], arg_index: int) -> np.ndarray:
    """Deterministic, non-trivial values: mixed signs, distinct per argument, away from 0 and ±1."""
    count = int(np.prod(shape)) if shape else 1
    k = np.arange(count, dtype=np.float64)
    magnitude = 0.35 + 0.55 * k + 0.2 * arg_index
    sign = np.where(k % 2 == 0, 1.0, -1.0)
    values = (magnitude * sign).reshape(tuple(shape))
    return values.astype(dtype)


def label_for(names: Sequence[str], args: Sequence[Any]) -> str:
    return ", ".join(f"{n}: {describe_array(a)}" for n, a in zip(names, args))


def synthesized(names: Sequence[str]) -> list[InputSet]:
    """One input set per probe type, every parameter of the same type."""
    sets = []
    for dtype, shape in PROBE_TYPES:
        args = [probe_array(dtype, shape, i) for i in range(len(names))]
        sets.append(InputSet(args, label_for(names, args), origin="guessed"))
    return sets


def with_magnitude(inputs: InputSet, names: Sequence[str], value: float) -> InputSet:
    """The same shapes and dtypes, every floating array filled with ``value``."""
    args = [
        np.full(a.shape, value, dtype=a.dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
        for a in inputs.args
    ]
    return InputSet(args, f"{inputs.label} filled with {value:g}", inputs.source, origin=inputs.origin)


def as_float64(inputs: InputSet, names: Sequence[str]) -> InputSet:
    args = [a.astype("float64") if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in inputs.args]
    return InputSet(args, label_for(names, args), inputs.source, origin=inputs.origin)


def brief(array: np.ndarray) -> str:
    """The first values of an array, for messages."""
    flat = np.asarray(array).ravel()
    shown = np.array2string(flat[:4], precision=4, separator=", ")
    return shown[:-1] + ", ...]" if flat.size > 4 else shown
