# ruff: noqa
# flake8: noqa
"""Mentions the marker only where no custom gradient can be defined (gate 2 skips it)."""

from tensorflow.python.ops import custom_gradient
from tensorflow.python.ops.custom_gradient import custom_gradient as _unused  # noqa: F401

experimental_custom_gradients = True  # a longer identifier


def save(options, custom_gradient=None):
    """Saves traced `tf.custom_gradient` functions when asked to."""
    name = custom_gradient.generate_name()  # the module, not the decorator
    custom_gradient = options.lookup(name)  # a local value
    return {"custom_gradient": name, "experimental_custom_gradients": experimental_custom_gradients}
