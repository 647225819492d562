"""Size limits before any write, and sync errors that persist, on a real kube-apiserver."""

from __future__ import annotations

from typing import Any

from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.api.limits import CONFIG_MAP_DATA_LIMIT
from mpi_operator.api.v2beta1 import parse, set_defaults
from mpi_operator.api.v2beta1.validation import config_shape
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.client import CONFIGMAPS, PODS, SECRETS, SERVICES, ApiError, Resource

RESOURCE_QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
FIELD = "spec.mpiReplicaSpecs[Worker].replicas"


async def children(cluster: Cluster, job: str) -> list[str]:
    names = []
    for resource in (SERVICES, CONFIGMAPS, SECRETS, PODS):
        for obj in await cluster.list(resource):
            if obj["metadata"]["name"].startswith(job):
                names.append(f"{resource.kind}/{obj['metadata']['name']}")
    return names


async def test_too_many_workers_for_a_config_map_is_reported_before_any_write(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    controller = await start_operator()
    created = await cluster.create(mpijob("big", workers=40_000))
    fits = config_shape(set_defaults(parse(created))).largest_fitting()
    event = await cluster.wait_event("ValidationError", name="big")
    assert event[0] == "Warning"
    assert f"{FIELD}: Invalid value: 40000" in event[2]
    assert f"at most {fits} workers fit" in event[2]
    await eventually(lambda: len(controller.queue) == 0, what="queue drained")
    # Not one child: the Service and Secret, made before the ConfigMap, were not written.
    assert await children(cluster, "big") == []
    # The largest count that fits is not refused (for "bag", a name as long as "big";
    # suspended: its ConfigMap, but no pods).
    await cluster.create(mpijob("bag", workers=fits, runPolicy={"suspend": True}))

    async def config_map_written() -> bool:
        return any(c["metadata"]["name"] == "bag-config" for c in await cluster.list(CONFIGMAPS))

    await eventually(config_map_written, within=30, what="bag-config created")
    assert "ValidationError" not in [e[1] for e in await cluster.events("bag")]


async def test_the_largest_count_that_fits_is_what_the_api_server_takes(cluster: Cluster) -> None:
    """The bound is the API server's own: the ConfigMap of ``fits`` workers, all running,
    is accepted; one more worker and it is refused as too long."""
    job = set_defaults(parse({**mpijob("edge", workers=1), "metadata": {"name": "edge"}}))
    job.metadata["namespace"] = cluster.ns
    fits = config_shape(job).largest_fitting()

    def config_map(workers: int, name: str) -> dict[str, Any]:
        running = [
            {"metadata": {"name": f"edge-worker-{i}", "namespace": cluster.ns}}
            for i in range(workers)
        ]
        built = new_config_map(job, workers, running)
        built["metadata"] = {"name": name}
        return built

    fitting = config_map(fits, "fits")
    assert sum(len(v.encode()) for v in fitting["data"].values()) <= CONFIG_MAP_DATA_LIMIT
    await cluster.kube.create(CONFIGMAPS, cluster.ns, fitting)
    try:
        await cluster.kube.create(CONFIGMAPS, cluster.ns, config_map(fits + 1, "too-long"))
    except ApiError as err:
        assert err.status == 422, err
        assert f"may not be more than {CONFIG_MAP_DATA_LIMIT} bytes" in err.message
    else:
        raise AssertionError("the API server took a ConfigMap over the limit")


async def _deny_services(cluster: Cluster) -> None:
    # No resourcequota controller runs here: the quota's status is set by hand, and the
    # admission plugin keeps it from there.
    hard = {"services": "0"}
    quota = await cluster.kube.create(
        RESOURCE_QUOTAS, cluster.ns, {"metadata": {"name": "no-services"}, "spec": {"hard": hard}}
    )
    quota["status"] = {"hard": hard, "used": {"services": "0"}}
    await cluster.kube.replace_status(RESOURCE_QUOTAS, cluster.ns, "no-services", quota)


async def test_a_sync_error_that_persists_becomes_a_warning_event(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """A Service the API server refuses on every sync: before, only the log said so."""
    await _deny_services(cluster)
    await start_operator()
    await cluster.create(mpijob("denied"))
    kind, _, message = await cluster.wait_event("SyncFailed", name="denied")
    assert kind == "Warning"
    assert message.startswith("403 Forbidden: ")
    assert 'services "denied" is forbidden: exceeded quota: no-services' in message
    # Once the cause is gone, the job goes on.
    await cluster.kube.delete(RESOURCE_QUOTAS, cluster.ns, "no-services")
    await cluster.wait_workers(2, job="denied", within=60)
