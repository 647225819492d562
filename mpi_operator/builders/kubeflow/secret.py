"""The SSH key Secret ``<job>-ssh`` that lets the launcher reach the workers."""

from __future__ import annotations

from collections.abc import Callable

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.kubeflow.common import SSH_AUTH_SECRET_SUFFIX, child_metadata
from mpi_operator.builders.ssh import SSHKeyPair, generate_ssh_key_pair, ssh_auth_secret


def new_ssh_auth_secret(
    job: MPIJob, keygen: Callable[[], SSHKeyPair] = generate_ssh_key_pair
) -> Obj:
    return ssh_auth_secret(child_metadata(job, job.name + SSH_AUTH_SECRET_SUFFIX), keygen())


def secret_keys(secret: Obj) -> list[str]:
    """The sorted data keys of a Secret; the controller recreates it when they differ."""
    return sorted((secret.get("data") or {}).keys())
