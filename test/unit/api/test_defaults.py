"""Defaulting matches the reference operator's."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob, set_defaults

CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "empty spec",
        {},
        {
            "runPolicy": {"cleanPodPolicy": "None"},
            "slotsPerWorker": 1,
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "AtStartup",
        },
    ),
    (
        "replica specs",
        {"mpiReplicaSpecs": {"Launcher": {}, "Worker": {}}},
        {
            "runPolicy": {"cleanPodPolicy": "None"},
            "slotsPerWorker": 1,
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "AtStartup",
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "OnFailure"},
                "Worker": {"replicas": 0, "restartPolicy": "Never"},
            },
        },
    ),
    (
        "set values are kept",
        {
            "slotsPerWorker": 0,
            "sshAuthMountPath": "/home/u/.ssh",
            "mpiImplementation": "MPICH",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "All"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never"},
                "Worker": {"replicas": 5, "restartPolicy": "OnFailure"},
            },
        },
        {
            "slotsPerWorker": 0,
            "sshAuthMountPath": "/home/u/.ssh",
            "mpiImplementation": "MPICH",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": {"cleanPodPolicy": "All"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never"},
                "Worker": {"replicas": 5, "restartPolicy": "OnFailure"},
            },
        },
    ),
    (
        "worker only",
        {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}},
        {
            "runPolicy": {"cleanPodPolicy": "None"},
            "slotsPerWorker": 1,
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "AtStartup",
            "mpiReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "Never"}},
        },
    ),
]


@pytest.mark.parametrize(("spec", "want"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_defaults(spec: dict[str, Any], want: dict[str, Any]) -> None:
    job = set_defaults(MPIJob.from_dict({"metadata": {"name": "j"}, "spec": spec}))
    assert job.to_dict()["spec"] == want


def test_defaulting_twice_changes_nothing() -> None:
    job = set_defaults(MPIJob.from_dict({"spec": {"mpiReplicaSpecs": {"Launcher": {}}}}))
    once = job.to_dict()
    assert set_defaults(job).to_dict() == once
