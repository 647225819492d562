"""The operator's validation of spec.elasticPolicy (ours): the same objects the CRD's
CEL rules refuse, with the fields named."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.v2beta1 import MPIJob, set_defaults, validate

W = "spec.mpiReplicaSpecs[Worker].replicas"


def job(policy: dict[str, Any] | None, workers: int = 2) -> MPIJob:
    spec: dict[str, Any] = {
        "mpiReplicaSpecs": {
            "Launcher": {"template": {"spec": {"containers": [{"name": "l"}]}}},
            "Worker": {
                "replicas": workers,
                "template": {"spec": {"containers": [{"name": "w"}]}},
            },
        },
    }
    if policy is not None:
        spec["elasticPolicy"] = policy
    return set_defaults(
        MPIJob.from_dict({"metadata": {"name": "pi", "namespace": "ns"}, "spec": spec})
    )


@pytest.mark.parametrize(
    ("policy", "workers", "errors"),
    [
        (None, 2, []),
        ({}, 2, []),
        ({"minReplicas": 1, "maxReplicas": 4}, 2, []),
        ({"minReplicas": 2, "maxReplicas": 2}, 2, []),
        ({"minReplicas": 1}, 2, []),
        ({"maxReplicas": 8}, 2, []),
        (
            {"minReplicas": 0},
            2,
            [
                "spec.elasticPolicy.minReplicas: Invalid value: 0: must be greater than or equal to 1"
            ],
        ),
        (
            {"minReplicas": 3, "maxReplicas": 2},
            2,
            [
                "spec.elasticPolicy.minReplicas: Invalid value: 3: "
                "must be no more than spec.elasticPolicy.maxReplicas",
                f"{W}: Invalid value: 2: must be at least spec.elasticPolicy.minReplicas (3)",
            ],
        ),
        (
            {"minReplicas": 1, "maxReplicas": 4},
            5,
            [f"{W}: Invalid value: 5: must be no more than spec.elasticPolicy.maxReplicas (4)"],
        ),
        ({"minReplicas": 1, "belowMinTimeoutSeconds": 0}, 2, []),
        (
            {"belowMinTimeoutSeconds": -1},
            2,
            [
                "spec.elasticPolicy.belowMinTimeoutSeconds: Invalid value: -1: "
                "must be greater than or equal to 0"
            ],
        ),
        (
            {"maxReplicas": MAX_WORKER_REPLICAS + 1},
            2,
            [
                f"spec.elasticPolicy.maxReplicas: Invalid value: {MAX_WORKER_REPLICAS + 1}: "
                f"must be no more than {MAX_WORKER_REPLICAS}"
            ],
        ),
    ],
)
def test_elastic_policy_errors(
    policy: dict[str, Any] | None, workers: int, errors: list[str]
) -> None:
    assert [str(e) for e in validate(job(policy, workers))] == errors


def test_elastic_policy_round_trips_through_the_model() -> None:
    obj = job({"minReplicas": 1, "maxReplicas": 4}).to_dict()
    assert obj["spec"]["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 4}
    assert "elasticPolicy" not in job(None).to_dict()["spec"]
