"""Pure builders of T9k MPIJob children: whole expected objects."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mpi_operator.api.t9k import MPIJob, parse, set_defaults
from mpi_operator.builders.ssh import SSHKeyPair
from mpi_operator.builders.t9k.config import hostfile, new_config_map
from mpi_operator.builders.t9k.podgroup import (
    new_pod_group,
    new_workload_pod_group,
    uses_workload_api,
)
from mpi_operator.builders.t9k.pods import (
    WAIT_FOR_WORKERS_SCRIPT,
    mpirun_command,
    new_launcher_pod,
    new_worker_pod,
)
from mpi_operator.builders.t9k.secret import new_ssh_secret
from mpi_operator.builders.t9k.service import new_service

OWNER = {
    "apiVersion": "batch.tensorstack.dev/v1beta1",
    "kind": "MPIJob",
    "name": "pi",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
LABELS = {
    "batch.tensorstack.dev/operator-name": "mpi-operator",
    "batch.tensorstack.dev/job-name": "pi",
}
#: The metadata of the job's PodGroup, of either API.
POD_GROUP_META = {"name": "pi", "namespace": "ns", "labels": LABELS, "ownerReferences": [OWNER]}
SSH_VOLUME = {
    "name": "ssh-auth",
    "secret": {
        "secretName": "pi-ssh",
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa"},
            {"key": "ssh-publickey", "path": "id_rsa.pub"},
            {"key": "ssh-publickey", "path": "authorized_keys"},
        ],
        "defaultMode": 0o600,
    },
}
CONFIG_VOLUME = {
    "name": "mpi-job-config",
    "configMap": {
        "name": "pi-config",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
    },
}
INIT = {
    "name": "wait-for-workers",
    "image": "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662",
    "command": ["sh", "-c", WAIT_FOR_WORKERS_SCRIPT],
    "volumeMounts": [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}],
}


def make(**spec: Any) -> MPIJob:
    worker: dict[str, Any] = {
        "replicas": 2,
        "cmd": ["./pi", "--steps", "10"],
        "template": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {
                "containers": [
                    {"name": "sidecar", "image": "side"},
                    {
                        "name": "mpi-worker",
                        "image": "mpi-pi",
                        "command": ["ignored"],
                        "args": ["ignored"],
                        "resources": {"limits": {"nvidia.com/gpu": 4, "cpu": "2"}},
                    },
                ]
            },
        },
    }
    worker.update(spec.pop("worker", {}))
    obj = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
        "spec": {"worker": worker, **spec},
    }
    return set_defaults(parse(obj))


MPIRUN_CASES = [
    ("plain", {}, ["mpirun", "--hostfile", "/etc/mpi/hostfile", "./pi", "--steps", "10"]),
    (
        "home, mca in key order, extra args",
        {
            "mpiHome": "/opt/openmpi",
            "mca": {"pml": "ob1", "btl": "^openib", "btl_tcp_if_include": "eth0"},
            "worker": {"extraMPIArgs": ["-N", "1", "--bind-to", "none"]},
        },
        [
            "/opt/openmpi/bin/mpirun",
            "--prefix",
            "/opt/openmpi",
            "--hostfile",
            "/etc/mpi/hostfile",
            "--mca",
            "btl",
            "^openib",
            "--mca",
            "btl_tcp_if_include",
            "eth0",
            "--mca",
            "pml",
            "ob1",
            "-N",
            "1",
            "--bind-to",
            "none",
            "./pi",
            "--steps",
            "10",
        ],
    ),
    (
        "home with trailing slash",
        {"mpiHome": "/usr/local/"},
        [
            "/usr/local/bin/mpirun",
            "--prefix",
            "/usr/local/",
            "--hostfile",
            "/etc/mpi/hostfile",
            "./pi",
            "--steps",
            "10",
        ],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in MPIRUN_CASES], ids=[c[0] for c in MPIRUN_CASES]
)
def test_mpirun_line(spec: dict[str, Any], expected: list[str]) -> None:
    assert mpirun_command(make(**spec)) == expected


HOSTFILE_CASES = [
    ("gpu limit", {}, 4),
    (
        "no gpu",
        {"worker": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        1,
    ),
    (
        "first container without mpi-worker name",
        {
            "worker": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                            {"name": "d", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
                        ]
                    }
                }
            }
        },
        2,
    ),
    (
        "gpu only requested",
        {
            "worker": {
                "template": {
                    "spec": {"containers": [{"resources": {"requests": {"nvidia.com/gpu": 2}}}]}
                }
            }
        },
        1,
    ),
]


@pytest.mark.parametrize(
    ("spec", "slots"), [c[1:] for c in HOSTFILE_CASES], ids=[c[0] for c in HOSTFILE_CASES]
)
def test_hostfile_slots(spec: dict[str, Any], slots: int) -> None:
    assert hostfile(make(**spec)) == (
        f"pi-worker-0.pi.ns.svc slots={slots}\npi-worker-1.pi.ns.svc slots={slots}\n"
    )


def test_config_map_service_secret() -> None:
    job = make()
    meta = {"namespace": "ns", "labels": LABELS, "ownerReferences": [OWNER]}
    assert new_config_map(job) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pi-config", **meta},
        "data": {"hostfile": "pi-worker-0.pi.ns.svc slots=4\npi-worker-1.pi.ns.svc slots=4\n"},
    }
    assert new_service(job) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "pi", **meta},
        "spec": {"clusterIP": "None", "selector": LABELS, "publishNotReadyAddresses": True},
    }
    keys = SSHKeyPair(b"PRIVATE", b"ssh-ed pub\n")
    assert new_ssh_secret(job, lambda: keys) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pi-ssh", **meta},
        "type": "kubernetes.io/ssh-auth",
        "data": {
            "ssh-privatekey": base64.b64encode(b"PRIVATE").decode(),
            "ssh-publickey": base64.b64encode(b"ssh-ed pub\n").decode(),
        },
    }


def pod_labels(role: str, index: int, **extra: str) -> dict[str, str]:
    return {
        "team": "a",
        **LABELS,
        "batch.tensorstack.dev/replica-type": role,
        "batch.tensorstack.dev/replica-index": str(index),
        **extra,
    }


def test_worker_pod() -> None:
    assert new_worker_pod(make(), 1) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-1",
            "namespace": "ns",
            "labels": pod_labels("worker", 1),
            "annotations": {"note": "x", "batch.tensorstack.dev/run-mode": "normal"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {"name": "sidecar", "image": "side"},
                {
                    "name": "mpi-worker",
                    "image": "mpi-pi",
                    "command": ["/usr/sbin/sshd", "-De"],
                    "resources": {"limits": {"nvidia.com/gpu": 4, "cpu": "2"}},
                    "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                },
            ],
            "hostname": "pi-worker-1",
            "subdomain": "pi",
            "restartPolicy": "Never",
            "volumes": [SSH_VOLUME],
        },
    }


def test_launcher_pod() -> None:
    assert new_launcher_pod(make(mca={"btl": "self"})) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-launcher",
            "namespace": "ns",
            "labels": pod_labels("launcher", 0),
            "annotations": {"note": "x", "batch.tensorstack.dev/run-mode": "normal"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "containers": [
                {
                    "name": "mpi-worker",
                    "image": "mpi-pi",
                    "command": [
                        "mpirun",
                        "--hostfile",
                        "/etc/mpi/hostfile",
                        "--mca",
                        "btl",
                        "self",
                        "./pi",
                        "--steps",
                        "10",
                    ],
                    "resources": {"limits": {"cpu": "2"}},
                    "volumeMounts": [
                        {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                        {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                    ],
                },
            ],
            "hostname": "pi-launcher",
            "subdomain": "pi",
            "restartPolicy": "Never",
            "volumes": [SSH_VOLUME, CONFIG_VOLUME],
            "initContainers": [INIT],
        },
    }


def test_custom_ssh_paths_and_scheduler() -> None:
    job = make(
        ssh={"sshAuthMountPath": "/home/mpi/.ssh", "sshdPath": "/usr/bin/sshd"},
        scheduler={"t9kScheduler": {"queue": "gpu", "priority": 50}},
    )
    worker = new_worker_pod(job, 0)
    assert worker["spec"]["schedulerName"] == "t9k-scheduler"
    assert worker["metadata"]["labels"] == pod_labels(
        "worker",
        0,
        **{"scheduler.tensorstack.dev/group-name": "pi", "scheduler.tensorstack.dev/queue": "gpu"},
    )
    container = worker["spec"]["containers"][1]
    assert container["command"] == ["/usr/bin/sshd", "-De"]
    assert container["volumeMounts"] == [{"name": "ssh-auth", "mountPath": "/home/mpi/.ssh"}]
    assert "defaultMode" not in worker["spec"]["volumes"][0]["secret"]
    launcher = new_launcher_pod(job)
    assert launcher["spec"]["schedulerName"] == "t9k-scheduler"
    assert new_pod_group(job) == {
        "apiVersion": "scheduler.tensorstack.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": POD_GROUP_META,
        "spec": {"minMember": 3, "queue": "gpu", "priority": 50},
    }
    assert new_pod_group(make()) is None


def test_with_the_workload_api_every_pod_joins_the_jobs_gang() -> None:
    job = make()
    assert uses_workload_api(job, workload_api=True)
    assert new_workload_pod_group(job) == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": POD_GROUP_META,
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    for pod in (
        new_worker_pod(job, 1, workload_api=True),
        new_launcher_pod(job, workload_api=True),
    ):
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "pi"}
        assert "schedulerName" not in pod["spec"]
    # Nothing else changes: the pod is the one built without the option, plus the group.
    joined = new_worker_pod(job, 1, workload_api=True)
    del joined["spec"]["schedulingGroup"]
    assert joined == new_worker_pod(job, 1)


def test_a_job_that_names_the_t9k_scheduler_keeps_it_under_the_workload_api() -> None:
    job = make(scheduler={"t9kScheduler": {"queue": "gpu"}})
    assert not uses_workload_api(job, workload_api=True)
    worker = new_worker_pod(job, 0, workload_api=True)
    assert worker["spec"]["schedulerName"] == "t9k-scheduler"
    assert "schedulingGroup" not in worker["spec"]
    assert "schedulingGroup" not in new_launcher_pod(job, workload_api=True)["spec"]


def test_without_the_workload_api_no_pod_joins_a_group() -> None:
    job = make()
    assert not uses_workload_api(job, workload_api=False)
    assert "schedulingGroup" not in new_worker_pod(job, 0)["spec"]
    assert "schedulingGroup" not in new_launcher_pod(job)["spec"]


def mpi(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == "mpi-worker")


def test_debug_mode_defaults() -> None:
    job = make(runMode={"debug": {"enable": True}})
    launcher = new_launcher_pod(job)
    assert mpi(launcher)["command"] == ["sleep", "inf"]
    assert launcher["spec"]["initContainers"] == [INIT]
    assert mpi(new_worker_pod(job, 0))["command"] == ["/usr/sbin/sshd", "-De"]
    assert launcher["metadata"]["annotations"]["batch.tensorstack.dev/run-mode"] == "debug"


def test_debug_mode_overrides() -> None:
    job = make(
        runMode={
            "debug": {
                "enabled": True,
                "replicaSpecs": [
                    {"type": "launcher", "skipInitContainer": True, "command": ["bash"]},
                    {"type": "worker", "command": ["sleep", "1d"]},
                ],
            }
        }
    )
    launcher = new_launcher_pod(job)
    assert mpi(launcher)["command"] == ["bash"]
    assert "initContainers" not in launcher["spec"]
    assert mpi(new_worker_pod(job, 0))["command"] == ["sleep", "1d"]


def test_resume_specs_apply_only_after_a_resume() -> None:
    job = make(
        runMode={
            "pause": {
                "enabled": False,
                "resumeSpecs": [
                    {
                        "type": "launcher",
                        "skipInitContainer": True,
                        "command": ["mpirun"],
                        "args": ["--resume"],
                    },
                    {"type": "worker", "args": ["-p", "2222"]},
                ],
            }
        }
    )
    fresh = new_launcher_pod(job)
    assert mpi(fresh)["command"][0] == "mpirun" and "args" not in mpi(fresh)
    assert "initContainers" in fresh["spec"]
    resumed = new_launcher_pod(job, resumed=True)
    assert mpi(resumed)["command"] == ["mpirun"]
    assert mpi(resumed)["args"] == ["--resume"]
    assert "initContainers" not in resumed["spec"]
    assert resumed["metadata"]["annotations"]["batch.tensorstack.dev/run-mode"] == "resumed"
    worker = mpi(new_worker_pod(job, 0, resumed=True))
    assert worker["command"] == ["/usr/sbin/sshd", "-De"]
    assert worker["args"] == ["-p", "2222"]


def test_builders_do_not_mutate_the_job() -> None:
    job = make()
    before = job.to_dict()
    new_launcher_pod(job)
    new_worker_pod(job, 0)
    assert job.to_dict() == before
