"""The pod informers cache only what the controllers read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpi_operator.controller.core.objects import pod_phase, slim_pod
from mpi_operator.controller.kubeflow.culprit import failed_pod

Obj = dict[str, Any]

CONDITION = {
    "type": "Ready",
    "status": "False",
    "reason": "PodCompleted",
    "message": "",
    "lastTransitionTime": "2026-11-25T08:00:00Z",
    "lastProbeTime": None,
    "observedGeneration": 1,
}
TERMINATED = {
    "exitCode": 137,
    "reason": "OOMKilled",
    "finishedAt": "2026-11-25T08:00:05Z",
    "startedAt": "2026-11-25T08:00:01Z",
    "containerID": "containerd://abc",
}


def full_pod() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-0",
            "namespace": "default",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"training.kubeflow.org/job-role": "worker"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"uid": "j1", "controller": True}],
            "creationTimestamp": "2026-11-25T08:00:00Z",
            "deletionTimestamp": "2026-11-25T08:01:00Z",
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {
            "nodeName": "node-0",
            "containers": [{"name": "worker", "image": "mpi", "env": [{"name": "X"}] * 20}],
            "volumes": [{"name": "ssh"}] * 5,
        },
        "status": {
            "phase": "Failed",
            "reason": "Evicted",
            "message": "The node was low on memory.",
            "startTime": "2026-11-25T08:00:01Z",
            "podIP": "10.0.0.1",
            "hostIP": "192.168.0.1",
            "qosClass": "BestEffort",
            "conditions": [CONDITION],
            "containerStatuses": [
                {
                    "name": "worker",
                    "state": {"terminated": TERMINATED},
                    "lastState": {},
                    "ready": False,
                    "restartCount": 0,
                    "image": "mpi",
                    "imageID": "sha256:...",
                    "containerID": "containerd://abc",
                    "started": False,
                }
            ],
        },
    }


def test_keeps_every_field_the_controllers_read() -> None:
    slim = slim_pod(full_pod())
    meta = dict(full_pod()["metadata"])
    del meta["managedFields"]
    assert slim["metadata"] == meta
    assert slim["spec"] == {"nodeName": "node-0"}
    status = slim["status"]
    assert {k: status[k] for k in ("phase", "reason", "message", "startTime")} == {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on memory.",
        "startTime": "2026-11-25T08:00:01Z",
    }
    assert status["conditions"] == [
        {k: CONDITION[k] for k in ("type", "status", "reason", "message", "lastTransitionTime")}
    ]
    assert status["containerStatuses"] == [
        {
            "name": "worker",
            "state": {"terminated": TERMINATED},
            "lastState": {},
            "ready": False,
            "restartCount": 0,
        }
    ]


@pytest.mark.parametrize(
    "read",
    [
        pod_phase,
        failed_pod,
    ],
    ids=["pod_phase", "failed_pod"],
)
def test_readers_see_the_same_answer_from_the_slim_pod(read: Any) -> None:
    assert read(slim_pod(full_pod())) == read(full_pod())


def test_drops_what_no_controller_reads() -> None:
    slim = slim_pod(full_pod())
    assert "containers" not in slim["spec"] and "volumes" not in slim["spec"]
    assert not {"podIP", "hostIP", "qosClass"} & slim["status"].keys()
    assert "imageID" not in slim["status"]["containerStatuses"][0]


@pytest.mark.parametrize(
    "pod",
    [
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p"}, "spec": {}, "status": {}},
        {"metadata": {"name": "p"}, "status": {"conditions": None, "containerStatuses": None}},
    ],
    ids=["no spec or status", "empty", "null lists"],
)
def test_sparse_pods_are_cached_without_error(pod: Obj) -> None:
    slim = slim_pod(pod)
    assert slim["metadata"] == {"name": "p"}


def test_the_watched_object_is_not_modified() -> None:
    pod = full_pod()
    slim_pod(pod)
    assert pod == full_pod()
    assert copy.deepcopy(pod) == pod
