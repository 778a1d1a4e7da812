"""runtime-check: run TensorFlow custom gradients eagerly and under ``tf.function``.

Importing this package does not import TensorFlow; only the child-process worker,
the checked decorator (:mod:`runtime_check.checked`) and an enabled pytest plugin do.
"""

from cg_lint import __version__  # one version for the distribution that ships both tools

__all__ = ["__version__"]
