"""The SSH key Secret ``<job>-ssh``, with the Kubeflow builder's key generator."""

from __future__ import annotations

import base64
from collections.abc import Callable

from mpi_operator.api.object_model import Obj
from mpi_operator.api.t9k import MPIJob
from mpi_operator.builders.common import SSH_PRIVATE_KEY, SSH_PUBLIC_KEY
from mpi_operator.builders.secret import SECRET_TYPE_SSH_AUTH, SSHKeyPair, generate_ssh_key_pair
from mpi_operator.builders.t9k.common import child_metadata, secret_name


def new_ssh_secret(job: MPIJob, keygen: Callable[[], SSHKeyPair] = generate_ssh_key_pair) -> Obj:
    keys = keygen()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": child_metadata(job, secret_name(job)),
        "type": SECRET_TYPE_SSH_AUTH,
        "data": {
            SSH_PRIVATE_KEY: base64.b64encode(keys.private_pem).decode("ascii"),
            SSH_PUBLIC_KEY: base64.b64encode(keys.authorized_key).decode("ascii"),
        },
    }
