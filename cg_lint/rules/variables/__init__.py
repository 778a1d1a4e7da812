"""Variables rules (CG004-CG007, CG018), one module per rule."""
