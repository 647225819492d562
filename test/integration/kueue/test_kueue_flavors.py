"""A ResourceFlavor's nodeLabels and tolerations through the real Kueue: on admission
Kueue writes them into the MPIJob's pod templates as it resumes it, and our operator
carries them into every worker pod and into the launcher Job it had already made
(suspended, at creation), so that every pod lands on the flavor's tainted node."""

from __future__ import annotations

from typing import Any

from kueue_harness import (
    KueueObjects,
    StartOperator,
    is_true,
    job_condition,
    queued_mpijob,
    suspended,
)

POOL_LABEL = "pool"
TAINT = {"key": "dedicated", "value": "a", "effect": "NoSchedule"}
TOLERATION = {**TAINT, "operator": "Equal"}


def carries_flavor(pod_spec: dict[str, Any]) -> bool:
    return (pod_spec.get("nodeSelector") or {}).get(POOL_LABEL) == "a" and TOLERATION in (
        pod_spec.get("tolerations") or []
    )


async def test_flavor_node_labels_and_tolerations_reach_every_pod(
    kq: KueueObjects, start_operator: StartOperator
) -> None:
    await start_operator()
    node = await kq.node("pool-a", {POOL_LABEL: "a"}, [TAINT])
    flavor = await kq.flavor("pool-a", nodeLabels={POOL_LABEL: "a"}, tolerations=[TOLERATION])
    cq = await kq.cluster_queue("pool-a", flavor, cpu="8")
    lq = await kq.local_queue("queue", cq)

    job = await kq.create(queued_mpijob("job", lq, workers=3))
    assert suspended(job)
    # Before admission the templates say nothing of the flavor.
    templates = job["spec"]["mpiReplicaSpecs"]
    assert not any(carries_flavor(t["template"]["spec"]) for t in templates.values())

    await kq.wait_workload("job", lambda w: is_true(w, "Admitted"), "Admitted")
    job = await kq.wait_job("job", lambda j: not suspended(j), "resumed by Kueue")
    for role, spec in job["spec"]["mpiReplicaSpecs"].items():
        assert carries_flavor(spec["template"]["spec"]), role

    pods = await kq.wait_running("job", workers=3)
    assert len(pods) == 4
    for pod in pods:
        name = pod["metadata"]["name"]
        assert carries_flavor(pod["spec"]), name
        assert pod["spec"]["nodeName"] == node, name
    launcher = await kq.launcher_job("job")
    assert launcher is not None and launcher["spec"].get("suspend") is False
    assert carries_flavor(launcher["spec"]["template"]["spec"])

    await kq.finish_launcher("job")
    await kq.wait_job("job", lambda j: job_condition(j, "Succeeded")[0] == "True", "Succeeded")
    await kq.wait_workload("job", lambda w: is_true(w, "Finished"), "Finished")
    assert await kq.warnings() == []
