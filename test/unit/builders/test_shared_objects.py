"""Table tests of the Service, ConfigMap (hostfile, discover_hosts.sh) and SSH Secret
builders."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mpijob_maker import OWNER, MakeMPIJob

from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.kubeflow.secret import new_ssh_auth_secret
from mpi_operator.builders.kubeflow.service import new_job_service
from mpi_operator.builders.ssh import SSHKeyPair, generate_ssh_key_pair


@pytest.mark.parametrize(
    ("launcher_as_worker", "want_spec"),
    [
        (
            False,
            {
                "clusterIP": "None",
                "selector": {
                    "training.kubeflow.org/operator-name": "mpi-operator",
                    "training.kubeflow.org/job-name": "foo",
                },
            },
        ),
        (
            True,
            {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": {
                    "training.kubeflow.org/operator-name": "mpi-operator",
                    "training.kubeflow.org/job-name": "foo",
                },
            },
        ),
    ],
)
def test_new_job_service(launcher_as_worker: bool, want_spec: dict[str, Any]) -> None:
    job = MakeMPIJob().set(runLauncherAsWorker=launcher_as_worker).obj()
    assert new_job_service(job) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "foo",
            "namespace": "bar",
            "labels": {"app": "foo"},
            "ownerReferences": [OWNER],
        },
        "spec": want_spec,
    }


def _pods(*names: str) -> list[dict[str, Any]]:
    return [{"metadata": {"name": n, "namespace": "bar"}} for n in names]


CONFIG_CASES = [
    (
        "OpenMPI",
        "",
        False,
        2,
        _pods(),
        "foo-worker-0.foo.bar.svc slots=3\nfoo-worker-1.foo.bar.svc slots=3\n",
        "#!/bin/sh\n",
    ),
    (
        "OpenMPI",
        "cluster.local",
        True,
        1,
        _pods("foo-worker-0"),
        "foo-launcher.foo.bar.svc.cluster.local slots=3\nfoo-worker-0.foo.bar.svc.cluster.local slots=3\n",
        "#!/bin/sh\necho foo-launcher.foo.bar.svc.cluster.local\n"
        "echo foo-worker-0.foo.bar.svc.cluster.local\n",
    ),
    (
        "Intel",
        "",
        False,
        2,
        _pods("foo-worker-1", "foo-worker-0"),
        "foo-worker-0.foo.bar.svc:3\nfoo-worker-1.foo.bar.svc:3\n",
        "#!/bin/sh\necho foo-worker-0.foo.bar.svc\necho foo-worker-1.foo.bar.svc\n",
    ),
    (
        "MPICH",
        "k8s.example",
        True,
        0,
        _pods(),
        "foo-launcher.foo.bar.svc.k8s.example:3\n",
        "#!/bin/sh\necho foo-launcher.foo.bar.svc.k8s.example\n",
    ),
    (
        "Intel",
        "",
        False,
        11,
        _pods("foo-worker-10", "foo-worker-9", "foo-worker-2"),
        "".join(f"foo-worker-{i}.foo.bar.svc:3\n" for i in range(11)),
        "#!/bin/sh\necho foo-worker-10.foo.bar.svc\necho foo-worker-2.foo.bar.svc\n"
        "echo foo-worker-9.foo.bar.svc\n",
    ),
]


@pytest.mark.parametrize(
    ("implementation", "domain", "launcher_as_worker", "workers", "running", "hostfile", "script"),
    CONFIG_CASES,
)
def test_new_config_map(
    implementation: str,
    domain: str,
    launcher_as_worker: bool,
    workers: int,
    running: list[dict[str, Any]],
    hostfile: str,
    script: str,
) -> None:
    job = (
        MakeMPIJob()
        .set(
            mpiImplementation=implementation,
            slotsPerWorker=3,
            runLauncherAsWorker=launcher_as_worker,
        )
        .obj()
    )
    assert new_config_map(job, workers, running, domain) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "foo-config",
            "namespace": "bar",
            "labels": {"app": "foo"},
            "ownerReferences": [OWNER],
        },
        "data": {"hostfile": hostfile, "discover_hosts.sh": script},
    }


def test_new_ssh_auth_secret_with_injected_keys() -> None:
    keys = SSHKeyPair(b"PRIVATE", b"ecdsa-sha2-nistp521 AAAA\n")
    assert new_ssh_auth_secret(MakeMPIJob().obj(), lambda: keys) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "foo-ssh",
            "namespace": "bar",
            "labels": {"app": "foo"},
            "ownerReferences": [OWNER],
        },
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(b"PRIVATE").decode(),
            "ssh-publickey": base64.b64encode(b"ecdsa-sha2-nistp521 AAAA\n").decode(),
        },
    }


def test_generated_ssh_keys_are_a_matching_p521_pair() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    keys = generate_ssh_key_pair()
    assert keys.private_pem.startswith(b"-----BEGIN EC PRIVATE KEY-----\n")
    private = serialization.load_pem_private_key(keys.private_pem, password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert private.curve.name == "secp521r1"
    public = serialization.load_ssh_public_key(keys.authorized_key.strip())
    assert public == private.public_key()
    assert keys.authorized_key.endswith(b"\n") and keys.authorized_key.count(b" ") == 1
