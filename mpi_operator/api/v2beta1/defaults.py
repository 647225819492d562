"""Defaulting of v2beta1 MPIJobs, with the reference operator's defaults."""

from __future__ import annotations

from mpi_operator.api.v2beta1.types import (
    CleanPodPolicy,
    LauncherCreationPolicy,
    MPIImplementation,
    MPIJob,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
)

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"


def _default_replica(spec: ReplicaSpec | None, replicas: int, restart: RestartPolicy) -> None:
    if spec is None:
        return
    if not spec.restart_policy:
        spec.restart_policy = restart
    if spec.replicas is None:
        spec.replicas = replicas


def set_defaults(job: MPIJob) -> MPIJob:
    """Fills unset fields in place and returns the same job.

    Mutates like the Kubernetes scheme defaulters do; callers that must keep
    the original (an informer's cached object) pass a copy.
    """
    # Assigning marks the parents as set, so that to_dict() emits the defaults.
    spec = job.spec = job.spec
    spec.run_policy = spec.run_policy
    if spec.run_policy.clean_pod_policy is None:
        spec.run_policy.clean_pod_policy = CleanPodPolicy.NONE
    if spec.slots_per_worker is None:
        spec.slots_per_worker = 1
    if not spec.ssh_auth_mount_path:
        spec.ssh_auth_mount_path = DEFAULT_SSH_AUTH_MOUNT_PATH
    if not spec.mpi_implementation:
        spec.mpi_implementation = MPIImplementation.OPEN_MPI
    if not spec.launcher_creation_policy:
        spec.launcher_creation_policy = LauncherCreationPolicy.AT_STARTUP
    _default_replica(job.replica_spec(ReplicaType.LAUNCHER), 1, RestartPolicy.ON_FAILURE)
    _default_replica(job.replica_spec(ReplicaType.WORKER), 0, RestartPolicy.NEVER)
    return job
