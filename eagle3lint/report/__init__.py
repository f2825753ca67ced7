"""Reporters: one diagnostic model, many output formats."""
