"""The SSH key Secret ``<job>-ssh``, with the Kubeflow builder's key generator."""

from __future__ import annotations

from collections.abc import Callable

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import MPIJob
from mpi_operator.builders.ssh import SSHKeyPair, generate_ssh_key_pair, ssh_auth_secret
from mpi_operator.builders.t9k.common import child_metadata, secret_name


def new_ssh_secret(job: MPIJob, keygen: Callable[[], SSHKeyPair] = generate_ssh_key_pair) -> Obj:
    return ssh_auth_secret(child_metadata(job, secret_name(job)), keygen())
