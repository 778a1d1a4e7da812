"""Arity rules (CG001-CG003), one module per rule."""
