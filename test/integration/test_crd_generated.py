"""The committed MPIJob CRD is what hack/generate_crd.py produces, and the API server
takes it: Established, structural, with its names accepted."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml

from devcluster import LocalCluster
from mpi_operator.api import crdgen

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "crd" / "kubeflow.org_mpijobs.yaml"
CRD_NAME = "mpijobs.kubeflow.org"


def _crd(cluster: LocalCluster) -> dict[str, Any]:
    status, body = cluster.request(
        "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
    )
    assert status == 200, body
    result: dict[str, Any] = body
    return result


def test_committed_crd_is_generated(api_cluster: LocalCluster) -> None:
    document, version = crdgen.fetch_document(api_cluster)
    expected = crdgen.generate(document, version)
    committed = CRD_FILE.read_text()
    if committed != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    "committed",
                    "generated",
                )
            )[:80]
        )
        raise AssertionError(f"{CRD_FILE} is out of date; run `make crd`:\n{diff}")


def test_generation_is_deterministic(api_cluster: LocalCluster) -> None:
    first = crdgen.generate(*crdgen.fetch_document(api_cluster))
    second = crdgen.generate(*crdgen.fetch_document(api_cluster))
    assert first == second


def test_api_server_establishes_the_crd(api_cluster: LocalCluster) -> None:
    crd = _crd(api_cluster)
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["Established"]["status"] == "True"
    assert conditions["NamesAccepted"]["status"] == "True"
    # A schema the server finds non-structural gets a NonStructuralSchema condition.
    assert "NonStructuralSchema" not in conditions
    accepted = crd["status"]["acceptedNames"]
    assert accepted["shortNames"] == ["mpij"]
    assert accepted["categories"] == ["kubeflow"]
    assert crd["status"]["storedVersions"] == ["v2beta1"]


def test_api_server_kept_the_schema_whole(api_cluster: LocalCluster) -> None:
    """Nothing of the generated CRD was dropped as an unknown field on the way in."""
    committed = next(d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d)
    served = _crd(api_cluster)
    assert served["spec"]["versions"] == committed["spec"]["versions"]
    assert served["spec"]["names"] == committed["spec"]["names"]


def test_discovery_lists_short_name_and_category(api_cluster: LocalCluster) -> None:
    status, body = api_cluster.request("GET", "/apis/kubeflow.org/v2beta1")
    assert status == 200, body
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["mpijobs"]["shortNames"] == ["mpij"]
    assert resources["mpijobs"]["categories"] == ["kubeflow"]
    assert "mpijobs/status" in resources
