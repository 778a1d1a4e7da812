"""Input discovery: shapes and dtypes under which a custom gradient's forward runs, per parameter.

``hints`` reads what the source says about each parameter (matmul/einsum/gather/conv operands,
``x.shape[-1]``, reductions over axes, integer indices, Python values, call sites with literal
shapes), ``assign`` turns those facts into concrete per-parameter candidates, ``repair`` reads the
forward's own errors into adjusted candidates, ``broadcast`` tells whether a parameter is broadcast
against another tensor, and ``search`` runs the bounded search. Nothing here needs configuration.
"""
