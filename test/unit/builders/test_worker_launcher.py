"""Table tests of the worker pod and launcher Job builders."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from mpijob_maker import OWNER, MakeMPIJob

from mpi_operator.builders.kubeflow.launcher import (
    new_launcher_job,
    sync_launcher_scheduling_directives,
)
from mpi_operator.builders.kubeflow.worker import new_worker

SSH_VOLUME = {
    "name": "ssh-auth",
    "secret": {
        "secretName": "foo-ssh",
        "defaultMode": 0o600,
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa"},
            {"key": "ssh-publickey", "path": "id_rsa.pub"},
            {"key": "ssh-publickey", "path": "authorized_keys"},
        ],
    },
}
SSH_SECRET_NO_MODE = {
    "secretName": "foo-ssh",
    "items": SSH_VOLUME["secret"]["items"],  # type: ignore[index]
}
CONFIG_VOLUME = {
    "name": "mpi-job-config",
    "configMap": {
        "name": "foo-config",
        "items": [
            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
        ],
    },
}
OMPI_ENV = [
    {"name": "K_MPI_JOB_ROLE", "value": "launcher"},
    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
    {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
    # Open MPI 5 (PRRTE) reads only these.
    {"name": "PRTE_MCA_prte_keep_fqdn_hostnames", "value": "true"},
    {"name": "PRTE_MCA_prte_default_hostfile", "value": "/etc/mpi/hostfile"},
    {"name": "PRTE_MCA_plm_ssh_args", "value": "-o ConnectionAttempts=10"},
    {"name": "PRTE_MCA_prte_set_default_slots", "value": "1"},
    {"name": "PRTE_MCA_prte_do_not_resolve", "value": "false"},
    {"name": "NVIDIA_VISIBLE_DEVICES"},
    {"name": "NVIDIA_DRIVER_CAPABILITIES"},
]


def worker_labels(index: str) -> dict[str, str]:
    return {
        "training.kubeflow.org/operator-name": "mpi-operator",
        "training.kubeflow.org/job-name": "foo",
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/replica-index": index,
    }


def default_worker(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"foo-worker-{index}",
            "namespace": "bar",
            "labels": worker_labels(str(index)),
            "ownerReferences": [OWNER],
        },
        "spec": {
            "hostname": f"foo-worker-{index}",
            "subdomain": "foo",
            "dnsConfig": {"searches": ["foo.bar.svc.cluster.local"]},
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "command": ["/usr/sbin/sshd", "-De"],
                    "env": [{"name": "K_MPI_JOB_ROLE", "value": "worker"}],
                    "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                }
            ],
            "volumes": [SSH_VOLUME],
        },
    }


def default_launcher() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "foo-launcher",
            "namespace": "bar",
            "labels": {"app": "foo"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "podReplacementPolicy": "Failed",
            "template": {
                "metadata": {
                    "labels": {
                        "training.kubeflow.org/operator-name": "mpi-operator",
                        "training.kubeflow.org/job-name": "foo",
                        "training.kubeflow.org/job-role": "launcher",
                    },
                    "ownerReferences": [OWNER],
                },
                "spec": {
                    "hostname": "foo-launcher",
                    "subdomain": "foo",
                    "restartPolicy": "OnFailure",
                    "containers": [
                        {
                            "name": "main",
                            "env": OMPI_ENV,
                            "volumeMounts": [
                                {"name": "ssh-auth", "mountPath": "/root/.ssh"},
                                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                            ],
                        }
                    ],
                    "volumes": [SSH_VOLUME, CONFIG_VOLUME],
                },
            },
        },
    }


def with_changes(obj: dict[str, Any], *changes: tuple[str, Any]) -> dict[str, Any]:
    """A copy with values set at dotted paths (``spec.template.spec.hostname``)."""
    out = copy.deepcopy(obj)
    for path, value in changes:
        node = out
        *parents, last = path.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[last] = value
    return out


WORKER_CASES = [
    ("defaults", MakeMPIJob(), 0, default_worker(0)),
    ("second worker", MakeMPIJob(), 1, default_worker(1)),
    (
        "launcher as worker shifts the index label",
        MakeMPIJob().set(runLauncherAsWorker=True),
        1,
        with_changes(default_worker(1), ("metadata.labels", worker_labels("2"))),
    ),
    (
        "host network, dns config, own labels, command kept",
        MakeMPIJob()
        .pod_spec("Worker", hostNetwork=True, dnsConfig={"searches": ["a.example"]})
        .container("Worker", args=["sleep"], env=[{"name": "A", "value": "1"}])
        .template_metadata("Worker", labels={"team": "x"}, annotations={"note": "y"}),
        0,
        with_changes(
            default_worker(0),
            ("metadata.labels", {"team": "x", **worker_labels("0")}),
            ("metadata.annotations", {"note": "y"}),
            ("spec.hostNetwork", True),
            ("spec.dnsPolicy", "ClusterFirstWithHostNet"),
            ("spec.dnsConfig", {"searches": ["a.example", "foo.bar.svc.cluster.local"]}),
            (
                "spec.containers",
                [
                    {
                        "name": "main",
                        "args": ["sleep"],
                        "env": [
                            {"name": "A", "value": "1"},
                            {"name": "K_MPI_JOB_ROLE", "value": "worker"},
                        ],
                        "volumeMounts": [{"name": "ssh-auth", "mountPath": "/root/.ssh"}],
                    }
                ],
            ),
        ),
    ),
    (
        "own command kept; custom ssh path gets no default mode",
        MakeMPIJob().set(sshAuthMountPath="/home/mpi/.ssh").container("Worker", command=["run"]),
        0,
        with_changes(
            default_worker(0),
            ("spec.containers.0.command", ["run"]),
            (
                "spec.containers.0.volumeMounts",
                [{"name": "ssh-auth", "mountPath": "/home/mpi/.ssh"}],
            ),
            ("spec.volumes", [{"name": "ssh-auth", "secret": SSH_SECRET_NO_MODE}]),
        ),
    ),
]


@pytest.mark.parametrize(
    ("job", "index", "want"), [c[1:] for c in WORKER_CASES], ids=[c[0] for c in WORKER_CASES]
)
def test_new_worker(job: MakeMPIJob, index: int, want: dict[str, Any]) -> None:
    assert new_worker(job.obj(), index) == want


def test_worker_exit_code_restart_policy_becomes_never() -> None:
    job = MakeMPIJob()
    job.replica("Worker")["restartPolicy"] = "ExitCode"
    assert new_worker(job.obj(), 0)["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("policy", "want"),
    [(None, 30), ("Launcher", 30), ("MPIJob", None)],
)
def test_the_launcher_job_carries_the_ttl_unless_it_deletes_the_mpijob(
    policy: str | None, want: int | None
) -> None:
    """Under ttlSecondsAfterFinishedPolicy MPIJob the MPIJob's deletion takes the
    launcher Job along; a launcher Job of its own TTL would go first and be rerun."""
    fields: dict[str, Any] = {"ttlSecondsAfterFinished": 30}
    if policy is not None:
        fields["ttlSecondsAfterFinishedPolicy"] = policy
    job = MakeMPIJob().run_policy(**fields).obj()
    assert new_launcher_job(job).job["spec"].get("ttlSecondsAfterFinished") == want


def _launcher_as_worker() -> dict[str, Any]:
    want = default_launcher()
    template = want["spec"]["template"]
    template["metadata"]["labels"]["training.kubeflow.org/replica-index"] = "0"
    slots = {"name": "OMPI_MCA_orte_set_default_slots", "value": "2"}
    prte_slots = {"name": "PRTE_MCA_prte_set_default_slots", "value": "2"}
    env = [*OMPI_ENV[:4], slots, *OMPI_ENV[5:8], prte_slots, OMPI_ENV[9]]
    template["spec"]["containers"][0]["env"] = env
    return want


LAUNCHER_CASES = [
    ("defaults", MakeMPIJob(), default_launcher()),
    (
        "run policy and suspend",
        MakeMPIJob().run_policy(
            ttlSecondsAfterFinished=1, activeDeadlineSeconds=2, backoffLimit=3, suspend=True
        ),
        with_changes(
            default_launcher(),
            ("spec.ttlSecondsAfterFinished", 1),
            ("spec.activeDeadlineSeconds", 2),
            ("spec.backoffLimit", 3),
            ("spec.suspend", True),
        ),
    ),
    (
        "launcher as worker keeps GPUs visible and gets index 0",
        MakeMPIJob().set(runLauncherAsWorker=True, slotsPerWorker=2),
        _launcher_as_worker(),
    ),
]


@pytest.mark.parametrize(
    ("job", "want"), [c[1:] for c in LAUNCHER_CASES], ids=[c[0] for c in LAUNCHER_CASES]
)
def test_new_launcher_job(job: MakeMPIJob, want: dict[str, Any]) -> None:
    built = new_launcher_job(job.obj())
    assert built.job == want
    assert built.warnings == []


@pytest.mark.parametrize(
    ("implementation", "env"),
    [
        (
            "Intel",
            [
                {"name": "I_MPI_HYDRA_HOST_FILE", "value": "/etc/mpi/hostfile"},
                {
                    "name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS",
                    "value": "-o ConnectionAttempts=10",
                },
                {"name": "I_MPI_PERHOST", "value": "4"},
            ],
        ),
        (
            "MPICH",
            [
                {"name": "HYDRA_HOST_FILE", "value": "/etc/mpi/hostfile"},
                {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
            ],
        ),
    ],
)
def test_launcher_environment_per_implementation(
    implementation: str, env: list[dict[str, str]]
) -> None:
    job = MakeMPIJob().set(mpiImplementation=implementation, slotsPerWorker=4).obj()
    container = new_launcher_job(job).job["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [
        {"name": "K_MPI_JOB_ROLE", "value": "launcher"},
        *env,
        {"name": "NVIDIA_VISIBLE_DEVICES"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES"},
    ]


def test_template_restart_policy_is_overridden_and_reported() -> None:
    job = MakeMPIJob().pod_spec("Launcher", restartPolicy="Always").obj()
    built = new_launcher_job(job)
    assert built.job["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert [(w.reason, w.message) for w in built.warnings] == [
        (
            "SetPodTemplateRestartPolicy",
            "Restart policy in pod template overridden by restart policy in replica spec",
        )
    ]


def test_builders_do_not_modify_the_job() -> None:
    job = MakeMPIJob().pod_spec("Worker", dnsConfig={"searches": ["x"]}).obj()
    before = job.to_dict()
    new_worker(job, 0)
    new_launcher_job(job)
    assert job.to_dict() == before


def test_sync_launcher_scheduling_directives() -> None:
    launcher = {
        "spec": {
            "template": {
                "metadata": {"labels": {"a": "1", "keep": "k"}, "annotations": {"x": "old"}},
                "spec": {
                    "nodeSelector": {"old": "n"},
                    "tolerations": [{"key": "t"}],
                    "containers": [{"name": "c"}],
                },
            }
        }
    }
    desired = {
        "metadata": {"labels": {"a": "2"}, "annotations": {"x": "new", "y": "1"}},
        "spec": {"nodeSelector": {"zone": "z"}, "schedulingGates": [{"name": "g"}]},
    }
    original = copy.deepcopy(launcher)
    updated = sync_launcher_scheduling_directives(launcher, desired)
    assert launcher == original
    assert updated["spec"]["template"] == {
        "metadata": {"labels": {"a": "2", "keep": "k"}, "annotations": {"x": "new", "y": "1"}},
        "spec": {
            "nodeSelector": {"zone": "z"},
            "schedulingGates": [{"name": "g"}],
            "containers": [{"name": "c"}],
        },
    }
