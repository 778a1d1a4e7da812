# The fixtures are inputs for runtime-check (deliberate defects, a suite run in a subprocess).
collect_ignore = ["fixtures"]
