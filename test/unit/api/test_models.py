"""MPIJob models: lossless round trips and the upstream JSON names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob, ReplicaType, set_defaults

FULL_JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v2beta1",
    "kind": "MPIJob",
    "metadata": {
        "name": "pi",
        "namespace": "default",
        "uid": "1234",
        "labels": {"team": "a"},
        "annotations": {"note": "x"},
        "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
        "resourceVersion": "42",
    },
    "spec": {
        "slotsPerWorker": 2,
        "runLauncherAsWorker": False,
        "sshAuthMountPath": "/home/mpiuser/.ssh",
        "mpiImplementation": "Intel",
        "launcherCreationPolicy": "WaitForWorkersReady",
        "runPolicy": {
            "cleanPodPolicy": "Running",
            "ttlSecondsAfterFinished": 60,
            "activeDeadlineSeconds": 600,
            "backoffLimit": 3,
            "suspend": True,
            "managedBy": "kueue.x-k8s.io/multikueue",
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "q",
                "minResources": {"cpu": "10", "memory": "1Gi"},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 30,
            },
        },
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {
                    "metadata": {"labels": {"x": "y"}},
                    "spec": {
                        "containers": [{"name": "l", "image": "img", "futureField": {"a": [1, 2]}}],
                        "resourceClaims": [{"name": "gpu"}],
                    },
                },
            },
            "Worker": {
                "replicas": 2,
                "restartPolicy": "Never",
                "template": {"spec": {"containers": [{"name": "w", "image": "img"}]}},
            },
        },
        "someFutureSpecField": {"enabled": True},
    },
    "status": {
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "MPIJobCreated",
                "message": "created",
                "lastUpdateTime": "2026-01-01T00:00:00Z",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {}},
        "startTime": "2026-01-01T00:00:00Z",
    },
}


@pytest.mark.parametrize(
    "obj",
    [
        FULL_JOB,
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": {"name": "m"},
            "spec": {"mpiReplicaSpecs": {"Launcher": {"template": {}}}},
        },
        {"metadata": {}, "spec": {}},
    ],
    ids=["full", "minimal", "empty"],
)
def test_round_trip_returns_the_same_json(obj: dict[str, Any]) -> None:
    assert MPIJob.from_dict(copy.deepcopy(obj)).to_dict() == obj


def test_parsing_does_not_alias_the_input() -> None:
    obj = copy.deepcopy(FULL_JOB)
    job = MPIJob.from_dict(obj)
    set_defaults(job)
    assert obj == FULL_JOB


def test_fields_are_reachable_by_python_names() -> None:
    job = MPIJob.from_dict(FULL_JOB)
    assert job.name == "pi" and job.namespace == "default" and job.uid == "1234"
    assert job.spec.slots_per_worker == 2
    assert job.spec.run_policy.scheduling_policy is not None
    assert job.spec.run_policy.scheduling_policy.schedule_timeout_seconds == 30
    launcher = job.replica_spec(ReplicaType.LAUNCHER)
    assert launcher is not None and launcher.restart_policy == "OnFailure"
    assert job.status is not None and job.status.conditions is not None
    assert job.status.conditions[0].last_transition_time == "2026-01-01T00:00:00Z"
