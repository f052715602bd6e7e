"""TODO floor docstring."""
