"""Admitted again into another flavor: a job that ran on flavor A is evicted (its Workload
deactivated), another job takes flavor A, and the first is admitted again, now into
flavor B. Kueue restores the job's templates on eviction and writes flavor B's
directives on the new admission; the launcher Job, which had started on A, must then
carry B's nodeSelector and toleration and none of A's (our operator clears its
startTime so that the API server lets its template change), and every pod of the
second run lands on B's node."""

from __future__ import annotations

from typing import Any

from kueue_harness import (
    WORKLOADS,
    KueueObjects,
    StartOperator,
    condition,
    is_true,
    job_condition,
    queued_mpijob,
    suspended,
)

from devcluster.polling import eventually


def pool(name: str) -> tuple[dict[str, str], dict[str, str]]:
    """The label and the toleration of pool ``name``'s nodes (tainted ``dedicated=name``)."""
    toleration = {"key": "dedicated", "operator": "Equal", "value": name, "effect": "NoSchedule"}
    return {"pool": name}, toleration


async def test_readmitted_into_another_flavor_runs_there(
    kq: KueueObjects, start_operator: StartOperator
) -> None:
    await start_operator()
    nodes, flavors = {}, {}
    for p in ("a", "b"):
        labels, toleration = pool(p)
        taint = {k: v for k, v in toleration.items() if k != "operator"}
        nodes[p] = await kq.node(f"pool-{p}", labels, [taint])
        flavors[p] = await kq.flavor(f"pool-{p}", nodeLabels=labels, tolerations=[toleration])
    cq = await kq.cluster_queue("two-pools", flavors["a"], cpu="3", more_flavors=[flavors["b"]])
    lq = await kq.local_queue("queue", cq)

    await kq.create(queued_mpijob("x", lq))
    await kq.wait_workload("x", lambda w: is_true(w, "Admitted"), "Admitted")
    first_run = await kq.wait_running("x", workers=2)
    assert {p["spec"]["nodeName"] for p in first_run} == {nodes["a"]}

    wl = await kq.workload("x")
    assert wl is not None
    await kq.kube.patch(WORKLOADS, kq.ns, wl["metadata"]["name"], {"spec": {"active": False}})

    def evicted(w: dict[str, Any]) -> bool:
        return (condition(w, "Evicted") or {}).get("status") == "True" and not is_true(
            w, "QuotaReserved"
        )

    await kq.wait_workload("x", evicted, "evicted, its quota released")
    await kq.wait_job("x", suspended, "suspended by Kueue")

    async def x_pods_gone() -> bool:
        return await kq.pods("x") == []

    await eventually(x_pods_gone, within=60, interval=0.2, what="x's pods gone")

    await kq.create(queued_mpijob("y", lq))
    await kq.wait_workload("y", lambda w: is_true(w, "Admitted"), "Admitted")
    y_run = await kq.wait_running("y", workers=2)
    assert {p["spec"]["nodeName"] for p in y_run} == {nodes["a"]}

    await kq.kube.patch(WORKLOADS, kq.ns, wl["metadata"]["name"], {"spec": {"active": True}})
    await kq.wait_workload("x", lambda w: is_true(w, "Admitted"), "Admitted again", within=90)
    job = await kq.wait_job("x", lambda j: not suspended(j), "resumed by Kueue")
    labels_b, toleration_b = pool("b")
    for role, spec in job["spec"]["mpiReplicaSpecs"].items():
        pod_spec = spec["template"]["spec"]
        assert pod_spec.get("nodeSelector") == labels_b, role
        assert pod_spec.get("tolerations") == [toleration_b], role

    second_run = await kq.wait_running("x", workers=2)
    assert {p["spec"]["nodeName"] for p in second_run} == {nodes["b"]}
    launcher = await kq.launcher_job("x")
    assert launcher is not None
    template = launcher["spec"]["template"]["spec"]
    assert template.get("nodeSelector") == labels_b
    assert template.get("tolerations") == [toleration_b]

    for name in ("x", "y"):
        await kq.finish_launcher(name)
    for name in ("x", "y"):
        await kq.wait_job(name, lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")
    assert await kq.warnings() == []
