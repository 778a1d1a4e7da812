"""Run one gradient computation eagerly and under tf.function; print OK or the exception."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf


def outcome(fn: Callable[[], object]) -> str:
    try:
        value = fn()
    except Exception as error:  # noqa: BLE001 - the exception is what we report
        # tf.function prefixes "in user code:" and a traceback; the cause is the last line
        lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
        return f"RAISES {type(error).__name__}: {lines[-1][:200] if lines else ''}"
    return f"OK {value}"


def both_modes(name: str, step: Callable[[], object]) -> None:
    print(f"{name} eager:       {outcome(step)}")
    print(f"{name} tf.function: {outcome(tf.function(step))}")
