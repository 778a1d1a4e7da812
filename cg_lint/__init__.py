"""cg-lint: a linter for TensorFlow custom gradients (``@tf.custom_gradient``).

The lint path never imports TensorFlow nor the code it reads.
"""

__version__ = "0.1.0"
