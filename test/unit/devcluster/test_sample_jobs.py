"""The sample pi MPIJob is valid and carries the KWOK behaviour it is asked for."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster import COMPLETE_AFTER, EXIT_CODE, START_DELAY
from devcluster.sample_jobs import pi_mpijob, with_kwok_behaviour
from mpi_operator.api.v2beta1 import parse, set_defaults, validate


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


@pytest.mark.parametrize(
    ("kwargs", "launcher", "worker"),
    [
        ({"launcher_runs_for": "4s"}, {COMPLETE_AFTER: "4s"}, {}),
        (
            {"launcher_runs_for": "2s", "start_delay": "1s", "exit_code": "7"},
            {COMPLETE_AFTER: "2s", START_DELAY: "1s", EXIT_CODE: "7"},
            {START_DELAY: "1s"},
        ),
    ],
)
def test_with_kwok_behaviour_annotates_a_copy(
    kwargs: dict[str, Any], launcher: dict[str, str], worker: dict[str, str]
) -> None:
    original = pi_mpijob("pi", launcher_exit=None)
    original["spec"]["mpiReplicaSpecs"]["Worker"]["template"].pop("metadata", None)
    before = copy.deepcopy(original)
    job = with_kwok_behaviour(original, **kwargs)
    assert original == before
    specs = job["spec"]["mpiReplicaSpecs"]
    assert specs["Launcher"]["template"]["metadata"]["annotations"] == launcher
    assert specs["Worker"]["template"]["metadata"]["annotations"] == worker
