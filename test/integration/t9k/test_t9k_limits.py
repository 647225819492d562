"""T9k MPIJobs that cannot proceed say so: size limits before any write, and a missing
PodGroup CRD. This module installs the T9k MPIJob CRD alone (not the t9k scheduler's
PodGroup CRD, which one test installs for a while)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from harness import controllers
from t9k_harness import POD_GROUP_CRD, T9K_CRD, T9kCluster, t9k_job

from devcluster.crds import crds_installed
from devcluster.polling import eventually
from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.t9k import parse, set_defaults
from mpi_operator.api.t9k.validation import config_shape
from mpi_operator.client import CONFIGMAPS, PODS, SECRETS, SERVICES, ApiError
from mpi_operator.controller.t9k import T9kMPIJobController

POD_GROUP_CRD_NAME = "podgroups.scheduler.tensorstack.dev"


@pytest.fixture(scope="module")
def t9k_crd_alone(api_cluster: Any) -> Iterator[None]:
    with crds_installed(api_cluster, (T9K_CRD,)):
        yield


@pytest.fixture
async def start(api_cluster: Any, namespace: str, t9k_crd_alone: None) -> AsyncIterator[Any]:
    async with controllers(api_cluster, namespace, T9kMPIJobController) as start:
        yield start


async def children(t9k: T9kCluster, job: str) -> list[str]:
    names = []
    for resource in (SERVICES, CONFIGMAPS, SECRETS, PODS):
        for obj in (await t9k.kube.list(resource, t9k.ns))["items"]:
            if obj["metadata"]["name"].startswith(job):
                names.append(f"{resource.kind}/{obj['metadata']['name']}")
    return names


async def wait_event(t9k: T9kCluster, reason: str, name: str) -> tuple[str, str, str]:
    found: list[tuple[str, str, str]] = []

    async def check() -> bool:
        found[:] = [e for e in await t9k.events(name) if e[1] == reason]
        return bool(found)

    await eventually(check, within=30, what=f"event {reason} for {name}")
    return found[0]


async def test_a_missing_pod_group_crd_is_named_on_the_job_until_installed(
    api_cluster: Any, t9k: T9kCluster, start: Any
) -> None:
    assert api_cluster.kubectl("get", "crd", POD_GROUP_CRD_NAME, check=False).returncode != 0
    await start()
    await t9k.create(t9k_job("gang", scheduler={"t9kScheduler": {"queue": "default"}}))
    kind, _, message = await wait_event(t9k, "SyncFailed", "gang")
    assert kind == "Warning"
    assert f'the CRD "{POD_GROUP_CRD_NAME}"' in message
    assert "spec.scheduler.t9kScheduler" in message
    assert "404" in message
    assert await t9k.pods("gang") == {}
    # A condition would be wrong: the job proceeds once the CRD is installed.
    with crds_installed(api_cluster, (POD_GROUP_CRD,)):
        await t9k.wait_pods({"gang-launcher", "gang-worker-0", "gang-worker-1"}, "gang", 60)


async def test_too_many_workers_for_the_hostfile_is_reported_before_any_write(
    t9k: T9kCluster, start: Any
) -> None:
    await start()
    created = await t9k.create(t9k_job("big", workers=40_000))
    fits = config_shape(set_defaults(parse(created))).largest_fitting()
    kind, _, message = await wait_event(t9k, "ValidationError", "big")
    assert kind == "Warning"
    assert "spec.worker.replicas: Invalid value: 40000" in message
    assert f"at most {fits} workers fit" in message
    assert await children(t9k, "big") == []


@pytest.mark.parametrize("workers", [MAX_WORKER_REPLICAS + 1, 10**9])
async def test_the_crd_refuses_more_workers_than_the_cap(
    t9k: T9kCluster, t9k_crd_alone: None, workers: int
) -> None:
    with pytest.raises(ApiError) as info:
        await t9k.create(t9k_job("huge", workers=workers))
    assert info.value.status == 422
    assert "spec.worker.replicas" in info.value.message
    assert f"less than or equal to {MAX_WORKER_REPLICAS}" in info.value.message
