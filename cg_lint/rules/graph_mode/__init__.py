"""Graph-mode rules (CG009-CG012), one module per rule."""
