"""Defaulting of T9k MPIJobs (in place, as the Kubernetes scheme defaulters do)."""

from __future__ import annotations

from mpi_operator.api.t9k.types import MPIJob, WorkerSpec

DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
DEFAULT_SSHD_PATH = "/usr/sbin/sshd"
DEFAULT_PRIORITY = 0


def set_defaults(job: MPIJob) -> MPIJob:
    """Fills unset fields and returns the same job.

    ``cleanUpWorkers`` is normalised to its lower-case string form (booleans
    become ``all``/``none``); an unknown string is kept, lower-cased, for
    validation to reject.
    """
    spec = job.spec = job.spec
    if spec.worker is not None:
        worker = spec.worker = spec.worker
        if worker.replicas is None:
            worker.replicas = 1
    else:
        spec.worker = WorkerSpec(replicas=1)
    ssh = spec.ssh = spec.ssh
    if not ssh.ssh_auth_mount_path:
        ssh.ssh_auth_mount_path = DEFAULT_SSH_AUTH_MOUNT_PATH
    if not ssh.sshd_path:
        ssh.sshd_path = DEFAULT_SSHD_PATH
    policy = spec.run_policy = spec.run_policy
    policy.clean_up_workers = policy.clean_up_policy()
    scheduler = job.t9k_scheduler
    if scheduler is not None and scheduler.priority is None:
        scheduler.priority = DEFAULT_PRIORITY
    return job
