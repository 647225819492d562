"""Benchmarks; run `make bench` or `python -m bench.<name>`."""
