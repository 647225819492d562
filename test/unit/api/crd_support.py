"""The committed MPIJob CRD's path and the generator script (hack/generate_crd.py) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "crd" / "kubeflow.org_mpijobs.yaml"


def load_generator() -> ModuleType:
    """hack/generate_crd.py, imported once as ``generate_crd``."""
    if "generate_crd" in sys.modules:
        return sys.modules["generate_crd"]
    spec = importlib.util.spec_from_file_location("generate_crd", ROOT / "hack" / "generate_crd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate_crd"] = module
    spec.loader.exec_module(module)
    return module
