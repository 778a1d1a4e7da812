"""The syntax layer: the file index (nodes, parents, names), tree walks, environments, positions."""
