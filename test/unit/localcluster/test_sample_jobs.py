"""The sample pi MPIJob is valid and carries the KWOK behaviour it is asked for."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import parse, set_defaults, validate
from mpi_operator.localcluster import COMPLETE_AFTER, EXIT_CODE
from mpi_operator.localcluster.sample_jobs import pi_mpijob


@pytest.mark.parametrize(
    ("kwargs", "workers", "annotations", "policy"),
    [
        ({}, 2, {COMPLETE_AFTER: "3s", EXIT_CODE: "0"}, None),
        ({"workers": 5, "launcher_exit": 3}, 5, {COMPLETE_AFTER: "3s", EXIT_CODE: "3"}, None),
        ({"launcher_exit": None}, 2, {}, None),
        (
            {"complete_after": "5s", "creation_policy": "WaitForWorkersReady"},
            2,
            {COMPLETE_AFTER: "5s", EXIT_CODE: "0"},
            "WaitForWorkersReady",
        ),
    ],
)
def test_pi_mpijob_is_valid_and_behaves_as_asked(
    kwargs: dict[str, Any], workers: int, annotations: dict[str, str], policy: str | None
) -> None:
    obj = pi_mpijob("pi", **kwargs)
    job = set_defaults(parse(obj))
    assert validate(job) == []
    specs = obj["spec"]["mpiReplicaSpecs"]
    assert specs["Worker"]["replicas"] == workers
    assert specs["Launcher"]["template"]["metadata"]["annotations"] == annotations
    assert specs["Launcher"]["template"]["spec"]["containers"][0]["command"][2] == str(workers)
    assert obj["spec"].get("launcherCreationPolicy") == policy
    assert obj["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 0}


def test_pi_mpijob_takes_a_worker_template() -> None:
    template = {"spec": {"containers": [{"name": "w", "image": "other"}]}}
    obj = pi_mpijob("pi", worker_template=template)
    assert obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"] is template
