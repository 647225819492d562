"""Objects we don't own, jobs we don't manage, invalid jobs, and restarts."""

from __future__ import annotations

import pytest
from controller_harness import Cluster, StartOperator, mpijob

from devcluster.polling import eventually
from mpi_operator.client import CONFIGMAPS, JOBS, PODS, SECRETS, SERVICES


@pytest.mark.parametrize(
    ("resource", "name"),
    [(SERVICES, "job"), (CONFIGMAPS, "job-config"), (PODS, "job-worker-0")],
)
async def test_foreign_object_with_a_clashing_name_is_reported(
    cluster: Cluster, start_operator: StartOperator, resource: object, name: str
) -> None:
    body: dict[str, object]
    if resource is SERVICES:
        body = {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
    elif resource is CONFIGMAPS:
        body = {"metadata": {"name": name}, "data": {"x": "y"}}
    else:
        body = {
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    await cluster.kube.create(resource, cluster.ns, body)  # type: ignore[arg-type]
    await start_operator()
    await cluster.create(mpijob())
    assert await cluster.wait_event("ErrResourceExists") == (
        "Warning",
        "ErrResourceExists",
        f'Resource "{name}" of Kind "" already exists and is not managed by MPIJob',
    )


async def test_job_managed_by_multikueue_is_left_alone(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    controller = await start_operator()
    await cluster.create(
        mpijob(name="remote", runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"})
    )
    await cluster.create(mpijob(name="local"))
    await cluster.wait_condition("Created", name="local")
    await eventually(lambda: len(controller.queue) == 0, what="queue drained")
    job = await cluster.job("remote")
    assert "status" not in job or not job["status"].get("conditions")
    assert await cluster.workers("remote") == []
    assert await cluster.events("remote") == []


async def test_invalid_job_gets_a_validation_event_and_nothing_else(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    # The CRD accepts these restart policies (they are API values); the
    # controller supports neither and says so for both.
    bad = mpijob(workers=1)
    bad["spec"]["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] = "Always"
    bad["spec"]["mpiReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    await cluster.create(bad)
    event = await cluster.wait_event("ValidationError")
    assert event == (
        "Warning",
        "ValidationError",
        "Found validation errors: [spec.mpiReplicaSpecs[Launcher].restartPolicy: "
        'Unsupported value: "Always": supported values: "Never", "OnFailure", '
        "spec.mpiReplicaSpecs[Worker].restartPolicy: "
        'Unsupported value: "ExitCode": supported values: "Never", "OnFailure"]',
    )
    assert await cluster.workers() == []
    assert await cluster.launcher() is None


async def test_restarted_operator_converges_without_duplicates(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    first = await start_operator()
    await cluster.create(mpijob(workers=6))
    await cluster.wait_workers(6)
    await first.stop(drain_seconds=1)
    workers = await cluster.workers()
    await cluster.set_pods_running(workers)
    await start_operator()
    await cluster.wait_replicas({"Launcher": {}, "Worker": {"active": 6}})
    assert len(await cluster.workers()) == 6
    assert len(await cluster.list(JOBS)) == 1


async def test_children_without_our_label_are_adopted(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    """A ConfigMap made by the reference operator (no operator label) is taken over."""
    created = await cluster.create(mpijob())
    owner = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "name": "job",
        "uid": created["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    await cluster.kube.create(
        CONFIGMAPS,
        cluster.ns,
        {
            "metadata": {
                "name": "job-config",
                "labels": {"app": "job"},
                "ownerReferences": [owner],
            },
            "data": {"hostfile": "stale"},
        },
    )
    await start_operator()
    await cluster.wait_workers(2)

    async def adopted_and_fixed() -> bool:
        cms = await cluster.list(CONFIGMAPS, "training.kubeflow.org/operator-name=mpi-operator")
        return any(
            c["metadata"]["name"] == "job-config" and c["data"]["hostfile"] != "stale" for c in cms
        )

    await eventually(adopted_and_fixed, what="ConfigMap adopted and rewritten")
    assert await cluster.events() and "ErrResourceExists" not in [
        e[1] for e in await cluster.events()
    ]


async def test_ssh_secret_missing_a_key_is_regenerated(
    cluster: Cluster, start_operator: StartOperator
) -> None:
    await start_operator()
    await cluster.create(mpijob())
    await cluster.wait_workers(2)

    async def secret() -> dict[str, object] | None:
        found = [s for s in await cluster.list(SECRETS) if s["metadata"]["name"] == "job-ssh"]
        return found[0] if found else None

    async def exists() -> bool:
        return await secret() is not None

    await eventually(exists, what="SSH Secret")
    broken = await secret()
    assert broken is not None
    broken["data"] = {"ssh-privatekey": broken["data"]["ssh-privatekey"]}  # type: ignore[index]
    await cluster.kube.replace(SECRETS, cluster.ns, "job-ssh", broken)

    async def repaired() -> bool:
        current = await secret()
        return current is not None and sorted(current["data"]) == [  # type: ignore[call-overload]
            "ssh-privatekey",
            "ssh-publickey",
        ]

    await eventually(repaired, what="Secret regenerated with both keys")
