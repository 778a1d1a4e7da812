"""runtime-check: run TensorFlow custom gradients eagerly and under ``tf.function``.

Importing this package does not import TensorFlow; only the child-process worker,
the checked decorator (:mod:`runtime_check.checked`) and an enabled pytest plugin do.
"""

__version__ = "0.1.0"
