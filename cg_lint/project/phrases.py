"""Phrases of the rules' messages that the project-wide decision reads (cg_lint.project.filtering)."""

# CG008's eager half ("eagerly keyword tensors are not inputs..."): without it, the keywords are
# configuration and only tracing breaks the call
EAGER_HALF = "eagerly keyword tensors"
# CG010's finding on a definition that hands its inputs to NumPy on purpose: only where the project
# itself traces it (the rule's message carries this phrase)
UNTRACEABLE = "this custom gradient cannot run under tf.function"
