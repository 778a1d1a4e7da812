"""Variables rules: the `variables=` contract of grad when the forward reads trainable variables.

Which variables a forward or grad reads is decided once, in ``cg_lint.analyses.variable_reads``
(before any rule runs); these rules only read ``record.variable_reads`` and ``grad.variable_reads``.
"""
