"""Benchmarks that print figures (not timed tests): run with ``python -m``."""
