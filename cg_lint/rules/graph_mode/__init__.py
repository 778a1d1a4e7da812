"""Graph-mode rules: Python values taken from tensors inside custom-gradient bodies.

AutoGraph never converts the forward or grad of a custom gradient (TF allowlists the decorator's
wrapper), so inside ``tf.function`` or Keras ``fit`` their Python control flow runs on symbolic
tensors. All of these work eagerly and fail when traced.
"""
