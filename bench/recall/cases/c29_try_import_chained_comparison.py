"""TensorFlow imported in try/except ImportError; grad uses a chained comparison on a tensor.

Source: https://github.com/tkipf/keras-gcn/issues/55
Bug: the report's code runs under both Keras and tf.keras and hits "using a tf.Tensor as a
Python bool is not allowed in Graph execution". `0.0 < x < 1.0` is `(0 < x) and (x < 1)`: the
`and` takes the truth value of a tensor, which raises under tf.function.
Expect: CG009
"""

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - the CPU-only build
    import tensorflow_cpu as tf


@tf.custom_gradient
def unit_interval(x):
    def grad(dy):
        inside = 0.0 < tf.reduce_min(x) < 1.0
        return dy if inside else tf.zeros_like(dy)

    return tf.clip_by_value(x, 0.0, 1.0), grad


def run_case():
    x = tf.constant([0.5, 0.25])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = unit_interval(x)
    return tape.gradient(y, x)


def graph_check():  # the same under tf.function, as the report runs it
    return tf.function(run_case)()
