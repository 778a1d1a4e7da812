"""Analyses over the model that several rules share: counting, tensor facts, variable reads."""
