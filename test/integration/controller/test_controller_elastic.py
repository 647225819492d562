"""An elastic MPIJob (``spec.elasticPolicy``) losing workers on the full shape's KWOK
nodes, read from the API server: KWOK evicts a worker (phase Failed, reason Evicted),
the operator and the real API server, scheduler and Job controller do the rest.

* One worker of three evicted, minReplicas 2: the job stays Running, a
  ``MPIJobWorkerLost`` Warning names the worker, its host leaves ``discover_hosts.sh``
  and ``BelowReplicas`` is True while the evicted pod is held (the test's finalizer);
  released, the worker is recreated and the job is back at three (``BelowReplicas``
  False, every host listed again).
* Two of three evicted and held: fewer than minReplicas run; once
  ``belowMinTimeoutSeconds`` is over (not before) the job fails (no failure policy),
  its Failed condition and event naming the worker.
"""

from __future__ import annotations

from typing import Any

from controller_harness import Cluster, mpijob
from harness import controllers
from kwok_support import (  # noqa: F401 (fixtures)
    hold,
    kwok_cluster_fixture,
    kwok_evict,
    kwok_kube_fixture,
    live,
    release,
    wait_phase,
)

from devcluster.polling import eventually
from mpi_operator.client import CONFIGMAPS, PODS
from mpi_operator.controller.core.objects import parse_time
from mpi_operator.controller.kubeflow.controller import MPIJobController

Obj = dict[str, Any]
WORKERS = ["job-worker-0", "job-worker-1", "job-worker-2"]


def _job(timeout: int) -> Obj:
    policy = {"minReplicas": 2, "maxReplicas": 4, "belowMinTimeoutSeconds": timeout}
    return mpijob(workers=3, elasticPolicy=policy)


async def _hosts(cluster: Cluster) -> list[str]:
    """The workers ``discover_hosts.sh`` lists now."""
    config = await cluster.kube.get(CONFIGMAPS, cluster.ns, "job-config")
    lines = str(config["data"]["discover_hosts.sh"]).splitlines()[1:]
    return [line.split()[1].split(".")[0] for line in lines]


async def _condition(cluster: Cluster, kind: str) -> Obj:
    job = await cluster.job()
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return dict(condition)
    return {}


async def _running_workers(cluster: Cluster) -> list[Obj]:
    await cluster.wait_condition("Running", within=60)
    workers = live(await cluster.workers())
    assert [w["metadata"]["name"] for w in workers] == WORKERS
    return workers


async def test_an_evicted_worker_is_replaced_while_the_elastic_job_runs(
    full_cluster: Any, full_namespace: str, cluster: Cluster
) -> None:
    async with controllers(full_cluster, full_namespace, MPIJobController) as start:
        await start()
        await cluster.create(_job(timeout=300))
        workers = await _running_workers(cluster)

        async def all_hosts() -> bool:
            return await _hosts(cluster) == WORKERS

        await eventually(all_hosts, within=30, interval=0.2, what="every worker a host")
        evicted = workers[1]
        await hold(cluster, "job-worker-1")
        await kwok_evict(cluster, evicted)
        _, _, message = await cluster.wait_event("MPIJobWorkerLost", within=30)
        assert message.startswith("worker job-worker-1 "), message
        assert "Evicted" in message, message

        async def shrunk() -> bool:
            held = await cluster.kube.get(PODS, cluster.ns, "job-worker-1")
            below = await _condition(cluster, "BelowReplicas")
            return (
                bool(held["metadata"].get("deletionTimestamp"))
                and await _hosts(cluster) == ["job-worker-0", "job-worker-2"]
                and (below.get("status"), below.get("reason")) == ("True", "MPIJobBelowReplicas")
            )

        await eventually(shrunk, within=30, interval=0.2, what="job-worker-1 out of the hosts")
        conditions = await cluster.conditions()
        assert conditions["Running"][0] == "True", conditions
        assert "Failed" not in conditions, conditions
        assert (await cluster.job())["status"]["lastFailure"]["pod"] == "job-worker-1"

        await release(cluster, "job-worker-1")

        async def recreated() -> bool:
            pods = {p["metadata"]["name"]: p for p in live(await cluster.workers())}
            pod = pods.get("job-worker-1")
            return pod is not None and pod["metadata"]["uid"] != evicted["metadata"]["uid"]

        await eventually(recreated, within=30, interval=0.2, what="job-worker-1 recreated")
        await wait_phase(cluster, "job-worker-1", "Running", within=30)

        async def back() -> bool:
            below = await _condition(cluster, "BelowReplicas")
            return below.get("status") == "False" and await _hosts(cluster) == WORKERS

        await eventually(back, within=30, interval=0.2, what="back at three workers")
        assert (await _condition(cluster, "BelowReplicas"))["reason"] == "MPIJobAtReplicas"
        conditions = await cluster.conditions()
        assert conditions["Running"][0] == "True", conditions
        assert "Failed" not in conditions, conditions
        reasons = [e[1] for e in await cluster.events()]
        assert reasons.count("MPIJobWorkerLost") == 1, reasons
        assert "MPIJobAtReplicas" in reasons, reasons


async def test_an_elastic_job_below_min_replicas_past_the_timeout_fails_naming_the_worker(
    full_cluster: Any, full_namespace: str, cluster: Cluster
) -> None:
    timeout = 4
    async with controllers(full_cluster, full_namespace, MPIJobController) as start:
        await start()
        await cluster.create(_job(timeout=timeout))
        workers = await _running_workers(cluster)
        for pod in workers[1:]:
            await hold(cluster, pod["metadata"]["name"])
            await kwok_evict(cluster, pod)
        await cluster.wait_event("MPIJobBelowMinReplicas", within=30)
        await cluster.wait_condition("Failed", within=30)
        failed = await _condition(cluster, "Failed")
        below = await _condition(cluster, "BelowReplicas")
        assert failed["reason"] == "MPIJobBelowMinReplicas", failed
        assert f"fewer than minReplicas 2 workers Running for {timeout}s" in failed["message"]
        status = (await cluster.job())["status"]
        culprit = status["lastFailure"]["pod"]
        assert culprit in ("job-worker-1", "job-worker-2"), status
        assert f"worker {culprit} " in failed["message"], failed
        assert "Evicted" in failed["message"], failed
        # Not before the timeout: below minReplicas since the condition's last update.
        since = parse_time(below["lastUpdateTime"])
        ended = parse_time(failed["lastTransitionTime"])
        assert since is not None and ended is not None
        assert ended - since >= timeout, (below, failed)
        assert below["status"] == "False", below
        messages = [m for _, r, m in await cluster.events() if r == "MPIJobBelowMinReplicas"]
        assert any(culprit in m for m in messages), messages
