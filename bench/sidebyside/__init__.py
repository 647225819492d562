"""Side-by-side benchmarks of this operator and the reference Go operator (v0.8.2).

See ``bench/README.md``; entry point ``python -m bench.sidebyside``.
"""
