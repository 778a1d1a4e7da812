"""What running one scenario with TensorFlow gave, as one comparable line (both TF drivers)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def outcome(thunk) -> str:
    try:
        value = thunk()
    except Exception as e:  # the point is to record what TF raises
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        message = next((ln for ln in reversed(lines) if "Error" in ln), lines[-1] if lines else "")
        return f"RAISES {type(e).__name__}: {message[:300]}"
    value = tf.nest.map_structure(lambda t: None if t is None else np.asarray(t).round(4).tolist(), value)
    return f"OK {value}"
