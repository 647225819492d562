"""PodGroup minResources: upstream's cases plus the corner cases (priority ordering,
truncation, quantity formats)."""

from __future__ import annotations

import pytest
from podgroup_maker import (
    MIN_RESOURCES,
    PLUGINS,
    VOLCANO,
    Obj,
    container,
    job,
    plugins_pg,
    replica,
    volcano_pg,
)

from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.kubeflow.podgroup import (
    calculate_min_resources,
    compute_min_resources,
    new_pod_group,
)

# -- minResources (upstream TestCalculatePGMinResources, TestAddResources) --------

PRIORITIES = {"high": 100_010, "low": 10_010}

MIN_RESOURCES_CASES: dict[str, tuple[MPIJob, int | None, dict[str, int], Obj | None]] = {
    "minResources is not empty": (
        job(policy={"minResources": MIN_RESOURCES}),
        0,
        {},
        {"cpu": "100", "example.com/gpu": "40", "memory": "512Gi"},
    ),
    "schedulingPolicy is nil": (job(), 0, {}, None),
    "minMember is 0": (job(launcher=replica(1, container({"cpu": "1"}))), 0, {}, None),
    "without priorityClass": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "1Gi"})),
            worker=replica(2, container({"cpu": "10", "memory": "32Gi"})),
        ),
        3,
        {},
        {"cpu": "22", "memory": "65Gi"},
    ),
    "without worker without priorityClass": (
        job(launcher=replica(1, container({"cpu": "2", "memory": "1Gi"}))),
        1,
        {},
        {"cpu": "2", "memory": "1Gi"},
    ),
    "several containers": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "1Gi"})),
            worker=replica(
                2,
                container({"cpu": "10", "memory": "32Gi"}),
                container({"cpu": "50", "memory": "512Gi"}),
            ),
        ),
        None,
        {},
        {"cpu": "122", "memory": "1089Gi"},
    ),
    "with non-existence priorityClass": (
        job(
            launcher=replica(
                1, container({"cpu": "2", "memory": "2Gi"}), priority_class="non-existence"
            ),
            worker=replica(
                2, container({"cpu": "5", "memory": "16Gi"}), priority_class="non-existence"
            ),
        ),
        2,
        {},
        {"cpu": "7", "memory": "18Gi"},
    ),
    "with existence priorityClass": (
        job(
            launcher=replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
            worker=replica(100, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
        ),
        2,
        PRIORITIES,
        {"cpu": "22", "memory": "68Gi"},
    ),
    # The lower-priority replica type is cut to minMember-1 even when it is the
    # launcher; the higher-priority workers then all count.
    "workers with higher priority: the launcher is truncated": (
        job(
            launcher=replica(1, container({"cpu": "1", "memory": "1Gi"}), priority_class="low"),
            worker=replica(3, container({"cpu": "10", "memory": "8Gi"}), priority_class="high"),
        ),
        2,
        PRIORITIES,
        {"cpu": "31", "memory": "25Gi"},
    ),
    "minMember 1 with workers: worker resources multiplied by zero": (
        job(
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(4, container({"cpu": "8", "nvidia.com/gpu": "1"})),
        ),
        1,
        {},
        {"cpu": "1", "nvidia.com/gpu": "0"},
    ),
    "minMember larger than the replicas: nothing truncated": (
        job(
            launcher=replica(1, container({"cpu": "1"})),
            worker=replica(2, container({"cpu": "2"})),
        ),
        10,
        {},
        {"cpu": "5"},
    ),
    "requests fall back to limits per resource": (
        job(
            launcher=replica(
                1,
                container(
                    {"cpu": "10", "memory": "16Gi"},
                    {"example.com/gpu": "8", "cpu": "20", "memory": "32Gi"},
                ),
            ),
        ),
        1,
        {},
        {"cpu": "10", "example.com/gpu": "8", "memory": "16Gi"},
    ),
    "only limits": (
        job(
            launcher=replica(1, container(None, {"cpu": "1"})),
            worker=replica(2, container(None, {"cpu": "250m", "memory": "100M"})),
        ),
        None,
        {},
        {"cpu": "1500m", "memory": "200M"},
    ),
    "formats: the first replica's format wins, sums are canonical": (
        job(
            launcher=replica(1, container({"cpu": "100m", "memory": "1G", "ephemeral": "0"})),
            worker=replica(
                3, container({"cpu": "300m", "memory": "1Gi", "ephemeral": "1Ki", "x": "1e3"})
            ),
        ),
        None,
        {},
        {"cpu": "1", "ephemeral": "3Ki", "memory": "4221225472", "x": "3e3"},
    ),
    "fractional binary quantities": (
        job(
            launcher=replica(1, container({"memory": "0.5Gi"})),
            worker=replica(2, container({"memory": "1.5Gi"})),
        ),
        None,
        {},
        {"memory": "3584Mi"},
    ),
    "sub-milli quantities": (
        job(
            launcher=replica(1, container({"cpu": "0.0000000001"})),
            worker=replica(3, container({"cpu": "1u"})),
        ),
        None,
        {},
        {"cpu": "3001n"},
    ),
    "numbers in JSON": (
        job(launcher=replica(1, container({"cpu": 2})), worker=replica(2, container({"cpu": 0.5}))),
        None,
        {},
        {"cpu": "3"},
    ),
}


@pytest.mark.parametrize(
    ("mpi_job", "min_member", "priorities", "want"),
    list(MIN_RESOURCES_CASES.values()),
    ids=list(MIN_RESOURCES_CASES),
)
def test_calculate_min_resources(
    mpi_job: MPIJob, min_member: int | None, priorities: dict[str, int], want: Obj | None
) -> None:
    assert calculate_min_resources(mpi_job, min_member, priorities) == want


def test_launcher_only_truncation_has_no_worker_to_cut() -> None:
    # Upstream would look for a second replica type here; with no worker the
    # calculation gives up, as upstream does when it finds no worker.
    mpi_job = job(launcher=replica(1, container({"cpu": "1"})))
    assert compute_min_resources(mpi_job, -1, {}) is None


def test_min_resources_in_pod_group_use_priority_classes() -> None:
    mpi_job = job(
        launcher=replica(1, container({"cpu": "2", "memory": "4Gi"}), priority_class="high"),
        worker=replica(100, container({"cpu": "20", "memory": "64Gi"}), priority_class="low"),
        policy={"minAvailable": 2},
    )
    assert new_pod_group(mpi_job, PLUGINS, PRIORITIES) == plugins_pg(
        {
            "minMember": 2,
            "minResources": {"cpu": "22", "memory": "68Gi"},
            "scheduleTimeoutSeconds": 0,
        }
    )
    assert new_pod_group(mpi_job, VOLCANO, PRIORITIES) == volcano_pg(
        {
            "minMember": 2,
            "priorityClassName": "high",
            "minResources": {"cpu": "22", "memory": "68Gi"},
        }
    )
