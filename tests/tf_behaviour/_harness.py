"""Shared by the scripts in this folder: a quiet TensorFlow, and one outcome line per scenario.

``SCENARIO: eager=<outcome> traced=<outcome>``, an outcome being ``ok`` plus the values the
scenario computed, or ``<ExceptionType>[@f|@grad]: <first sentence of the message>``. ``@f`` /
``@grad`` say which body of the custom gradient was the last one entered when it raised (``@grad``:
at gradient time); no suffix: neither had been entered.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")

import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")
tf.autograph.set_verbosity(0)

# the standard scenario: y = 2x for x > 0, -3x otherwise; its custom gradient is ten times the
# true one (20 / -30), so plain autodiff (2 / -3) and a branch frozen at trace time both show
POINTS = (2.0, -3.0)
WANT = "y=4,9 g=20,-30"

_entered = ["-"]


def mark(body: str) -> None:
    """Called first thing in each custom gradient's ``f`` (``"f"``) and ``grad`` (``"grad"``)."""
    _entered[0] = body


def message(exc: BaseException) -> str:
    """The first sentence of the message that says what went wrong, without the wrappers that
    tf.function ("in user code:") and Keras ("Exception encountered when calling ...") put around it."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines and lines[0].startswith("in user code:"):
        inner = [i for i, ln in enumerate(lines) if re.match(r"^[A-Za-z_.]*(Error|Exception): ", ln)]
        if inner:
            lines = [lines[inner[-1]].split(": ", 1)[1]] + lines[inner[-1] + 1:]
    if lines and lines[0].startswith("Exception encountered when calling"):
        lines = lines[1:]
    if lines and lines[0] == "Graph execution error:":
        # the failing op's own message is the line above its "[[{{node ...}}]]" trailer
        trailer = next((i for i, ln in enumerate(lines) if ln.startswith("[[{{node")), 0)
        if trailer > 1:
            lines = lines[trailer - 1:]
    first = lines[0] if lines else ""
    end = re.search(r"(?<=[a-z)`'\]])\. ", first)
    if end and end.start() > 20 and len(first) > 160:
        first = first[:end.start() + 1]
    first = re.sub(r"0x[0-9a-fA-F]+", "0x...", first)
    return first[:160] + ("..." if len(first) > 160 else "")


def outcome(thunk: Callable[[], object]) -> str:
    _entered[0] = "-"
    try:
        value = thunk()
    except Exception as exc:  # noqa: BLE001 - the exception is the result
        where = "" if _entered[0] == "-" else "@" + _entered[0]
        return f"{type(exc).__name__}{where}: {message(exc)}"
    return "ok" if value is None else f"ok {value}"


def line(name: str, eager: str, traced: str) -> None:
    print(f"{name}: eager={eager} traced={traced}", flush=True)


def row(name: str, eager: Callable[[], object] | None, traced: Callable[[], object] | None) -> None:
    """Run both thunks (``None``: not applicable) and print the scenario's line."""
    line(name, outcome(eager) if eager else "n/a", outcome(traced) if traced else "n/a")


def num(t: object) -> str:
    """A tensor, number, None or nest of them, compactly (``4``, ``-0.5``, ``None``, ``[1,2]``)."""
    if t is None:
        return "None"
    if isinstance(t, (list, tuple)):
        return "[" + ",".join(num(v) for v in t) + "]"
    value = t.numpy() if hasattr(t, "numpy") else t
    try:
        flat = [float(v) for v in getattr(value, "flat", [value])]
    except (TypeError, ValueError):
        return repr(value)
    text = ",".join(f"{v:.6g}" for v in flat)
    return text if len(flat) == 1 and getattr(value, "ndim", 0) == 0 else f"[{text}]"


def tape_value(cg: Callable, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """(cg(x), d cg(x) / dx) under a GradientTape."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = cg(x)
    return y, tape.gradient(y, x)


def at_points(fn: Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]]) -> str:
    """``y=..,.. g=..,..`` for fn at POINTS, with ``WRONG`` when it is not WANT."""
    ys, gs = [], []
    for v in POINTS:
        y, g = fn(tf.constant(v))
        ys.append(num(y))
        gs.append(num(g))
    got = f"y={','.join(ys)} g={','.join(gs)}"
    return got if got == WANT else f"WRONG {got} (want {WANT})"


def scalar_function(fn: Callable) -> Callable:
    """tf.function over one float32 scalar: both points run through the same trace, so a branch
    frozen at trace time shows as a wrong value at the second point."""
    return tf.function(fn, input_signature=[tf.TensorSpec([], tf.float32)])


def both(name: str, fn: Callable[[tf.Tensor], tuple[tf.Tensor, tf.Tensor]]) -> None:
    """The standard scenario: fn eagerly and under one tf.function trace, at both points."""
    row(name, lambda: at_points(fn), lambda: at_points(scalar_function(fn)))


if __name__ == "__main__":
    sys.exit("a helper module; run the other scripts")
