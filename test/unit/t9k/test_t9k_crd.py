"""The T9k MPIJob CRD is generated from the T9k models (`make crd`): every field has the
description of its model field, so `kubectl explain` documents it, and its short names
are its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mpi_operator.api.crdgen.t9k import build_t9k_crd, generate_t9k

ROOT = Path(__file__).resolve().parents[3]
T9K_CRD = ROOT / "crd/t9k/batch.tensorstack.dev_mpijobs.yaml"
KUBEFLOW_CRD = ROOT / "crd/kubeflow.org_mpijobs.yaml"


def _undocumented(schema: dict[str, Any], path: str) -> list[str]:
    missing = [] if schema.get("description") or path == ".metadata" else [path or "."]
    for name, prop in (schema.get("properties") or {}).items():
        missing += _undocumented(prop, f"{path}.{name}")
    if "items" in schema:
        missing += [m for m in _undocumented(schema["items"], f"{path}[]") if m != f"{path}[]"]
    return missing


def test_committed_crd_is_generated() -> None:
    assert T9K_CRD.read_text() == generate_t9k(), "run `make crd` (or hack/generate_crd.py --t9k)"


def test_every_field_is_described() -> None:
    root = build_t9k_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _undocumented(root, "") == []
    spec = root["properties"]["spec"]["properties"]
    assert "mpirun" in spec["mpiHome"]["description"]
    assert "Defaults to 1" in spec["worker"]["properties"]["replicas"]["description"]


def test_names_do_not_take_over_kubeflow_short_names() -> None:
    t9k = yaml.safe_load(T9K_CRD.read_text())["spec"]["names"]
    kubeflow = next(d for d in yaml.safe_load_all(KUBEFLOW_CRD.read_text()) if d)["spec"]["names"]
    # The plural and singular are T9k's own and stay shared; the rest is distinct.
    assert (t9k["plural"], t9k["singular"]) == ("mpijobs", "mpijob")
    assert t9k["shortNames"] == ["t9kmpijob", "tmj"]
    assert not set(t9k["shortNames"]) & set(kubeflow["shortNames"])
    assert not set(t9k["categories"]) & set(kubeflow["categories"])
