"""The SSH key pair, its Secret and its volume, shared by the builders of both kinds."""

from __future__ import annotations

import base64
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mpi_operator.api.object_model import Obj

SECRET_TYPE_SSH_AUTH = "kubernetes.io/ssh-auth"
SSH_AUTH_VOLUME = "ssh-auth"
ROOT_SSH_PATH = "/root/.ssh"
SSH_PRIVATE_KEY = "ssh-privatekey"
SSH_PUBLIC_KEY = "ssh-publickey"
SSH_PRIVATE_KEY_FILE = "id_rsa"
SSH_PUBLIC_KEY_FILE = "id_rsa.pub"
SSH_AUTHORIZED_KEYS_FILE = "authorized_keys"


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


def ssh_auth_secret(metadata: Obj, keys: SSHKeyPair) -> Obj:
    """The ``kubernetes.io/ssh-auth`` Secret holding ``keys``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": SECRET_TYPE_SSH_AUTH,
        "data": {
            SSH_PRIVATE_KEY: base64.b64encode(keys.private_pem).decode("ascii"),
            SSH_PUBLIC_KEY: base64.b64encode(keys.authorized_key).decode("ascii"),
        },
    }


def ssh_secret_volume(secret_name: str, mount_path: str) -> Obj:
    """The volume of an SSH key Secret: private and public key, and the public key again
    as authorized_keys."""
    secret: Obj = {
        "secretName": secret_name,
        "items": [
            {"key": SSH_PRIVATE_KEY, "path": SSH_PRIVATE_KEY_FILE},
            {"key": SSH_PUBLIC_KEY, "path": SSH_PUBLIC_KEY_FILE},
            {"key": SSH_PUBLIC_KEY, "path": SSH_AUTHORIZED_KEYS_FILE},
        ],
    }
    if mount_path == ROOT_SSH_PATH:
        # sshd refuses keys readable by others, but only root can own 0600 files.
        secret["defaultMode"] = 0o600
    return {"name": SSH_AUTH_VOLUME, "secret": secret}
