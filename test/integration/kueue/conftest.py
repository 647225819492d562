"""Fixtures of the Kueue suite; the harness is in kueue_harness.py (a unique module name:
several test folders have a conftest.py)."""

from kueue_harness import kns, kq, kube, kueue_env, start_operator

__all__ = ["kns", "kq", "kube", "kueue_env", "start_operator"]
