"""What running one scenario with TensorFlow gave, as one comparable line (both TF drivers)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def outcome(thunk) -> str:
    try:
        value = thunk()
    except Exception as e:  # the point is to record what TF raises
        # Keras wraps a layer's error: "Exception encountered when calling X.call().", TF's message,
        # then "Arguments received by X.call():" and one line per argument; keep TF's message
        text = str(e).split("Arguments received by", 1)[0]
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        wrapped = [i for i, ln in enumerate(lines[:-1])
                   if "Exception encountered when calling" in ln or ln.endswith("Error encountered:")]
        if wrapped:
            message = lines[wrapped[-1] + 1]
        else:
            message = next((ln for ln in reversed(lines) if "Error" in ln), lines[-1] if lines else "")
            if message.startswith("[[{{node") and len(lines) > 1:
                # a graph execution error ends with the failing node; its message is the line above
                message = lines[lines.index(message) - 1]
        return f"RAISES {type(e).__name__}: {message[:300]}"
    value = tf.nest.map_structure(lambda t: None if t is None else np.asarray(t).round(4).tolist(), value)
    return f"OK {value}"
