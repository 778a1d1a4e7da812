"""A log-density closure whose grad returns d log_prob / d state without reading its upstream.

Corpus finding: CG013 (GPflow/GPflow, optimizers/mcmc.py, SamplingHelper's
target_log_prob_fn closure). Its grad returns the tape's gradient of the log-density and never
reads dy. That is right only while the caller differentiates the log-density itself; a sampler
that tempers it (replica exchange multiplies the target log-density by an inverse temperature
beta) or any scaled loss gets the untempered gradient instead of beta times it.
"""

import tensorflow as tf
from _harness import both_modes

w = tf.Variable([1.0, 2.0])


def log_density():
    return -0.5 * tf.reduce_sum(w * w)


@tf.custom_gradient
def target(*state):
    for old, new in zip([w], state):
        old.assign(new)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([w])
        value = log_density()

    def grad(dy, variables=None):
        return tape.gradient(value, [w]), [None]

    return value, grad


def tempered_gradient(beta=0.25):
    state = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(state)
        tempered = beta * target(state)
    return tape.gradient(tempered, state)  # true: beta * -state = [-0.25, -0.5]


if __name__ == "__main__":
    both_modes("tempered log-density gradient (true [-0.25 -0.5])", tempered_gradient)
