"""Fixed randomness for passes that must be compared value by value, and nothing left behind.

``tf.random.set_seed`` resets TensorFlow's eager op-seed counter and its kernel cache, so the same
sequence of random ops draws the same numbers after each reset, op-seeded or not. The global seed
a run found (the project's, or none) is put back afterwards: a seed left set by one check would
make every later random draw in the worker a fixed sequence, and findings depend on run order.
A reset clears TensorFlow's kernel cache, so callers reset only where randomness matters.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.eager import context


class FixedRandomness:
    """``with FixedRandomness(seed) as fixed:`` then ``fixed.reset()`` before each pass."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._saved: int | None = None

    def __enter__(self) -> FixedRandomness:
        self._saved = context.global_seed()
        return self

    def reset(self) -> None:
        tf.random.set_seed(self.seed)

    def __exit__(self, *exc: Any) -> None:
        tf.random.set_seed(self._saved)
