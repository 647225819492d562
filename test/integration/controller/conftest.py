"""Fixtures of the controller's integration tests; the harness is in controller_harness.py
(a unique module name: several test folders have a conftest.py)."""

from controller_harness import cluster, start_operator

__all__ = ["cluster", "start_operator"]
