"""The SSH key Secret ``<job>-ssh`` that lets the launcher reach the workers."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import MPIJob
from mpi_operator.builders.common import (
    SSH_AUTH_SECRET_SUFFIX,
    SSH_PRIVATE_KEY,
    SSH_PUBLIC_KEY,
    child_metadata,
)

SECRET_TYPE_SSH_AUTH = "kubernetes.io/ssh-auth"


@dataclass(frozen=True, slots=True)
class SSHKeyPair:
    private_pem: bytes
    """PEM block ``EC PRIVATE KEY`` (SEC 1)."""
    authorized_key: bytes
    """One OpenSSH authorized_keys line, newline-terminated."""


def generate_ssh_key_pair() -> SSHKeyPair:
    """A fresh ECDSA P-521 key pair. CPU-bound (milliseconds): run it off the event loop."""
    key = ec.generate_private_key(ec.SECP521R1())
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return SSHKeyPair(private_pem, public + b"\n")


def new_ssh_auth_secret(
    job: MPIJob, keygen: Callable[[], SSHKeyPair] = generate_ssh_key_pair
) -> Obj:
    keys = keygen()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": child_metadata(job, job.name + SSH_AUTH_SECRET_SUFFIX),
        "type": SECRET_TYPE_SSH_AUTH,
        "data": {
            SSH_PRIVATE_KEY: base64.b64encode(keys.private_pem).decode("ascii"),
            SSH_PUBLIC_KEY: base64.b64encode(keys.authorized_key).decode("ascii"),
        },
    }


def secret_keys(secret: Obj) -> list[str]:
    """The sorted data keys of a Secret; the controller recreates it when they differ."""
    return sorted((secret.get("data") or {}).keys())
