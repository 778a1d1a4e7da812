"""The model: one ``CustomGradient`` record per definition (``records``), built once per file (``builder``)."""
