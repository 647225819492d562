"""Fixtures of the T9k controller's integration tests; the harness is in t9k_harness.py
(a unique module name: several test folders have a conftest.py)."""

from t9k_harness import start_t9k, t9k, t9k_crds

__all__ = ["start_t9k", "t9k", "t9k_crds"]
