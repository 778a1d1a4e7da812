"""Rules on what grad computes with its upstream gradient (the chain rule)."""
