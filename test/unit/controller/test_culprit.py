"""The failed pod that is named as the cause of a job's failure (pure), table by table."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.controller.kubeflow.policy import culprit, failed_pod

Obj = dict[str, Any]


def terminated(name: str, code: int, reason: str, at: str, key: str = "state") -> Obj:
    return {
        "name": name,
        key: {"terminated": {"exitCode": code, "reason": reason, "finishedAt": at}},
    }


def pod(
    name: str,
    role: str = "worker",
    phase: str = "Failed",
    containers: list[Obj] | None = None,
    init: list[Obj] | None = None,
    **status: Any,
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "uid": name + "-uid",
            "labels": {"training.kubeflow.org/job-role": role},
        },
        "status": {
            "phase": phase,
            "containerStatuses": containers or [],
            "initContainerStatuses": init or [],
            **status,
        },
    }


T1, T2 = "2026-11-25T10:00:01Z", "2026-11-25T10:00:02Z"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            pod("pi-worker-3", containers=[terminated("trainer", 137, "OOMKilled", T1)]),
            "worker pi-worker-3 container trainer terminated: OOMKilled (exit 137)",
        ),
        (
            pod(
                "pi-worker-0",
                containers=[
                    {"name": "sidecar", "state": {"running": {}}},
                    terminated("main", 3, "Error", T1, key="lastState"),
                ],
            ),
            "worker pi-worker-0 container main terminated: Error (exit 3)",
        ),
        (
            pod(
                "pi-worker-1",
                containers=[terminated("main", 1, "Error", T2)],
                init=[terminated("setup", 2, "Error", T1)],
            ),
            "worker pi-worker-1 container setup terminated: Error (exit 2)",
        ),
        (
            pod(
                "pi-worker-0",
                containers=[terminated("worker", 137, "Error", T1)],
                reason="Evicted",
                message="The node was low on resource memory.",
            ),
            "worker pi-worker-0 container worker terminated: Error (exit 137); "
            "pod Evicted: The node was low on resource memory.",
        ),
        (
            pod("pi-launcher-x", role="launcher", reason="DeadlineExceeded"),
            "launcher pi-launcher-x failed: DeadlineExceeded",
        ),
        (pod("pi-worker-2"), "worker pi-worker-2 failed: Failed"),
    ],
)
def test_a_failed_pod_is_described(given: Obj, message: str) -> None:
    found = failed_pod(given)
    assert found is not None and found.message == message


@pytest.mark.parametrize("phase", ["Running", "Succeeded", "Pending", ""])
def test_only_failed_pods_are_failures(phase: str) -> None:
    containers = [terminated("main", 1, "Error", T1)]
    assert failed_pod(pod("p", phase=phase, containers=containers)) is None


def test_the_earliest_failure_is_the_culprit_and_ties_go_to_workers() -> None:
    launcher = pod("pi-launcher", role="launcher", containers=[terminated("l", 1, "Error", T2)])
    worker = pod("pi-worker-1", containers=[terminated("w", 137, "OOMKilled", T1)])
    found = culprit([launcher, pod("pi-worker-0", phase="Running"), worker])
    assert found is not None and found.pod == "pi-worker-1"
    same_time = pod("pi-launcher", role="launcher", containers=[terminated("l", 1, "Error", T1)])
    found = culprit([same_time, worker])
    assert found is not None and found.pod == "pi-worker-1"
    assert culprit([pod("a", phase="Running")]) is None


def test_the_status_field_has_every_part() -> None:
    found = failed_pod(pod("pi-worker-3", containers=[terminated("trainer", 137, "OOMKilled", T1)]))
    assert found is not None
    assert found.status(T2).model_dump(by_alias=True, exclude_none=True) == {
        "pod": "pi-worker-3",
        "replicaType": "Worker",
        "container": "trainer",
        "exitCode": 137,
        "reason": "OOMKilled",
        "message": "worker pi-worker-3 container trainer terminated: OOMKilled (exit 137)",
        "time": T2,
    }
    assert found.uid == "pi-worker-3-uid"
    assert found.conditions == ()
    assert found.terminations == (("trainer", 137, "OOMKilled"),)
