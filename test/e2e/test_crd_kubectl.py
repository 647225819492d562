"""The generated MPIJob CRD through the real kubectl: admission (schema, enums, CEL
rules), the status subresource, printer columns, short name and category."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import kubectl_table

from mpi_operator.localcluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "v2beta1").glob("*/*.yaml"))


def _template(name: str = "c", **container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "busybox", **container}]}}


def _job(name: str = "job", workers: int | None = 2, **spec: Any) -> dict[str, Any]:
    replicas: dict[str, Any] = {"Launcher": {"replicas": 1, "template": _template("launcher")}}
    if workers is not None:
        replicas["Worker"] = {"replicas": workers, "template": _template("worker")}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"mpiReplicaSpecs": replicas, **spec},
    }


def _with(job: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``job`` with the dotted ``path`` set (``None`` deletes it)."""
    job = copy.deepcopy(job)
    *parents, last = path.split(".")
    node = job
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return job


def _dry_run(cluster: LocalCluster, namespace: str, obj: dict[str, Any]) -> tuple[int, str]:
    out = cluster.kubectl(
        "apply",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump(obj),
        check=False,
    )
    return out.returncode, out.stdout + out.stderr


LAUNCHER = "spec.mpiReplicaSpecs.Launcher"
WORKER = "spec.mpiReplicaSpecs.Worker"

BAD = {
    "launcher-replicas-2": (
        _with(_job(), f"{LAUNCHER}.replicas", 2),
        "spec.mpiReplicaSpecs[Launcher].replicas must be 1",
    ),
    "launcher-replicas-0": (
        _with(_job(), f"{LAUNCHER}.replicas", 0),
        "spec.mpiReplicaSpecs[Launcher].replicas must be 1",
    ),
    "worker-replicas-0": (
        _job(workers=0),
        "spec.mpiReplicaSpecs[Worker].replicas must be greater than or equal to 1",
    ),
    "worker-replicas-negative": (
        _job(workers=-3),
        "spec.mpiReplicaSpecs[Worker].replicas must be greater than or equal to 1",
    ),
    "missing-launcher": (
        _with(_job(), LAUNCHER, None),
        "spec.mpiReplicaSpecs[Launcher] is required",
    ),
    "missing-replica-specs": (
        _with(_job(), "spec.mpiReplicaSpecs", None),
        "spec.mpiReplicaSpecs: Required value",
    ),
    "negative-slots": (
        _job(slotsPerWorker=-1),
        "spec.slotsPerWorker: Invalid value: -1",
    ),
    "negative-ttl": (
        _job(runPolicy={"ttlSecondsAfterFinished": -1}),
        "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1",
    ),
    "negative-deadline": (
        _job(runPolicy={"activeDeadlineSeconds": -5}),
        "spec.runPolicy.activeDeadlineSeconds: Invalid value: -5",
    ),
    "negative-backoff": (
        _job(runPolicy={"backoffLimit": -1}),
        "spec.runPolicy.backoffLimit: Invalid value: -1",
    ),
    "unknown-mpi-implementation": (
        _job(mpiImplementation="LAM"),
        'spec.mpiImplementation: Unsupported value: "LAM"',
    ),
    "unknown-clean-pod-policy": (
        _job(runPolicy={"cleanPodPolicy": "Sometimes"}),
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes"',
    ),
    "unknown-launcher-creation-policy": (
        _job(launcherCreationPolicy="Eventually"),
        'spec.launcherCreationPolicy: Unsupported value: "Eventually"',
    ),
    "unknown-restart-policy": (
        _with(_job(), f"{WORKER}.restartPolicy", "Sometimes"),
        'spec.mpiReplicaSpecs.Worker.restartPolicy: Unsupported value: "Sometimes"',
    ),
    "unknown-managed-by": (
        _job(runPolicy={"managedBy": "someone/else"}),
        'spec.runPolicy.managedBy: Unsupported value: "someone/else"',
    ),
    "bad-min-resources-quantity": (
        _job(runPolicy={"schedulingPolicy": {"minResources": {"cpu": "lots"}}}),
        'spec.runPolicy.schedulingPolicy.minResources.cpu: Invalid value: "lots"',
    ),
    "bad-container-quantity": (
        _with(
            _job(),
            f"{WORKER}.template",
            _template("worker", resources={"limits": {"memory": "1 GB"}}),
        ),
        "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits.memory",
    ),
    "wrong-type": (
        _job(slotsPerWorker="two"),
        'spec.slotsPerWorker: Invalid value: "string"',
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_mpijob_is_rejected_naming_the_field(
    api_cluster: LocalCluster, namespace: str, case: str
) -> None:
    obj, expected = BAD[case]
    code, output = _dry_run(api_cluster, namespace, obj)
    assert code != 0, output
    assert expected in output, output


GOOD = {
    "openmpi": _job(mpiImplementation="OpenMPI"),
    "intel": _job(mpiImplementation="Intel", slotsPerWorker=4),
    "mpich": _job(mpiImplementation="MPICH", launcherCreationPolicy="WaitForWorkersReady"),
    "launcher-as-worker-no-worker": _job(workers=None, runLauncherAsWorker=True),
    "launcher-only": _job(workers=None),
    "replicas-unset": _with(
        _with(_job(), f"{LAUNCHER}.replicas", None), f"{WORKER}.replicas", None
    ),
    "zero-slots-and-limits": _job(
        slotsPerWorker=0,
        runPolicy={"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 0, "backoffLimit": 0},
    ),
    "suspended": _job(runPolicy={"suspend": True, "cleanPodPolicy": "All"}),
    "scheduling-policy": _job(
        runPolicy={
            "cleanPodPolicy": "Running",
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "default",
                "minResources": {"cpu": "3", "memory": "1.5Gi", "nvidia.com/gpu": 2},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 60,
            },
        }
    ),
    "managed-by-kueue": _job(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}),
    "managed-by-us": _job(runPolicy={"managedBy": "kubeflow.org/mpi-operator"}),
    # The API accepts every restart policy; the operator supports only two of them.
    "restart-policies": _with(
        _with(_job(), f"{LAUNCHER}.restartPolicy", "ExitCode"), f"{WORKER}.restartPolicy", "Always"
    ),
    # Empty means the default to the operator, and the reference CRD took it.
    "empty-policies": _with(_job(launcherCreationPolicy=""), f"{LAUNCHER}.restartPolicy", ""),
    "clean-pod-policy-none": _job(runPolicy={"cleanPodPolicy": "None"}, sshAuthMountPath="/ssh"),
    "rich-pod-template": _with(
        _job(),
        f"{WORKER}.template",
        {
            "metadata": {
                "labels": {"app": "x"},
                "annotations": {"a": "b"},
                "name": "ignored",
            },
            "spec": {
                "containers": [
                    {
                        "name": "worker",
                        "image": "busybox",
                        "ports": [{"containerPort": 22}, {"containerPort": 22, "protocol": "UDP"}],
                        "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                        "livenessProbe": {"tcpSocket": {"port": "ssh"}},
                        "readinessProbe": {"httpGet": {"port": 8080, "path": "/"}},
                        "env": [{"name": "A", "value": "1"}],
                    }
                ],
                "volumes": [
                    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                ],
                "tolerations": [{"operator": "Exists"}],
                "restartPolicy": "Never",
            },
        },
    ),
}


@pytest.mark.parametrize("case", sorted(GOOD))
def test_good_mpijob_is_accepted(api_cluster: LocalCluster, namespace: str, case: str) -> None:
    code, output = _dry_run(api_cluster, namespace, GOOD[case])
    assert code == 0, output
    assert "created (server dry run)" in output


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_accepted(api_cluster: LocalCluster, namespace: str, example: Path) -> None:
    for doc in yaml.safe_load_all(example.read_text()):
        if doc and doc.get("kind") == "MPIJob":
            code, output = _dry_run(api_cluster, namespace, doc)
            assert code == 0, output


def _get(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", "mpijob", name, "-n", namespace, "-o", "json")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _create(cluster: LocalCluster, namespace: str, obj: dict[str, Any]) -> None:
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def test_api_server_applies_the_defaults(api_cluster: LocalCluster, namespace: str) -> None:
    _create(api_cluster, namespace, _job(runPolicy={}))
    spec = _get(api_cluster, namespace, "job")["spec"]
    assert spec["slotsPerWorker"] == 1
    assert spec["runLauncherAsWorker"] is False
    assert spec["sshAuthMountPath"] == "/root/.ssh"
    assert spec["launcherCreationPolicy"] == "AtStartup"
    assert spec["mpiImplementation"] == "OpenMPI"
    assert spec["runPolicy"] == {"suspend": False}


@pytest.mark.parametrize(
    ("patch", "kind"),
    [
        ({"spec": {"runPolicy": {"managedBy": "kubeflow.org/mpi-operator"}}}, "merge"),
        ([{"op": "remove", "path": "/spec/runPolicy/managedBy"}], "json"),
        ([{"op": "remove", "path": "/spec/runPolicy"}], "json"),
    ],
    ids=["changed", "removed", "run-policy-removed"],
)
def test_managed_by_is_immutable(
    api_cluster: LocalCluster, namespace: str, patch: Any, kind: str
) -> None:
    _create(api_cluster, namespace, _job(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    out = api_cluster.kubectl(
        "patch",
        "mpijob",
        "job",
        "-n",
        namespace,
        f"--type={kind}",
        "-p",
        json.dumps(patch),
        check=False,
    )
    assert out.returncode != 0
    assert "spec.runPolicy.managedBy: Invalid value" in out.stderr
    assert "spec.runPolicy.managedBy is immutable" in out.stderr
    # Other fields still change.
    api_cluster.kubectl(
        "patch", "mpijob", "job", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"runPolicy": {"suspend": True}, "slotsPerWorker": 2}}),
    )  # fmt: skip
    job = _get(api_cluster, namespace, "job")
    assert job["spec"]["runPolicy"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert job["spec"]["slotsPerWorker"] == 2


def test_managed_by_cannot_be_set_later(api_cluster: LocalCluster, namespace: str) -> None:
    _create(api_cluster, namespace, _job())
    out = api_cluster.kubectl(
        "patch", "mpijob", "job", "-n", namespace, "--type=merge",
        "-p", json.dumps({"spec": {"runPolicy": {"managedBy": "kubeflow.org/mpi-operator"}}}),
        check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert "spec.runPolicy.managedBy is immutable" in out.stderr


def _set_status(cluster: LocalCluster, namespace: str, name: str, status: dict[str, Any]) -> None:
    cluster.kubectl(
        "patch", "mpijob", name, "-n", namespace, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip


def _cond(type_: str, status: str, reason: str) -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": f"{type_} is {status}",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_status_subresource_keeps_every_field_the_controller_writes(
    api_cluster: LocalCluster, namespace: str
) -> None:
    _create(api_cluster, namespace, _job())
    status = {
        "conditions": [_cond("Created", "True", "MPIJobCreated")],
        "replicaStatuses": {
            "Launcher": {"active": 1, "succeeded": 0, "failed": 0},
            "Worker": {
                "active": 2,
                "labelSelector": {"matchLabels": {"training.kubeflow.org/job-name": "job"}},
                "selector": "training.kubeflow.org/job-name=job",
            },
        },
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:01:00Z",
        "lastReconcileTime": "2026-01-01T00:01:00Z",
    }
    _set_status(api_cluster, namespace, "job", {**status, "unknownField": 1})
    job = _get(api_cluster, namespace, "job")
    assert job["status"] == status
    # The main resource ignores status; the status subresource ignores spec.
    api_cluster.kubectl(
        "patch", "mpijob", "job", "-n", namespace, "--type=merge",
        "-p", json.dumps({"status": {"startTime": None}}),
    )  # fmt: skip
    assert _get(api_cluster, namespace, "job")["status"]["startTime"] == status["startTime"]


def test_printer_columns(api_cluster: LocalCluster, namespace: str) -> None:
    _create(api_cluster, namespace, _job("running", workers=4))
    _create(api_cluster, namespace, _job("done", workers=2))
    _create(api_cluster, namespace, _job("new", workers=None))
    _set_status(
        api_cluster,
        namespace,
        "running",
        {
            "conditions": [
                _cond("Created", "True", "MPIJobCreated"),
                _cond("Running", "True", "MPIJobRunning"),
            ],
            "replicaStatuses": {"Launcher": {"active": 1}, "Worker": {"active": 3}},
            "state": "Running",
        },
    )
    _set_status(
        api_cluster,
        namespace,
        "done",
        {
            "conditions": [
                _cond("Created", "True", "MPIJobCreated"),
                _cond("Running", "False", "MPIJobRunning"),
                _cond("Succeeded", "True", "MPIJobSucceeded"),
            ],
            "replicaStatuses": {"Launcher": {"succeeded": 1}, "Worker": {}},
            "state": "Succeeded",
        },
    )
    for resource in ("mpijobs", "mpij", "mpijob.kubeflow.org"):
        rows = {r["NAME"]: r for r in kubectl_table(api_cluster, resource, "-n", namespace)}
        assert list(rows["running"]) == [
            "NAME",
            "STATE",
            "ACTIVE",
            "WORKERS",
            "LAUNCHER",
            "AGE",
        ]
        assert rows["running"]["STATE"] == "Running"
        assert rows["running"]["ACTIVE"] == "3"
        assert rows["running"]["WORKERS"] == "4"
        assert rows["running"]["LAUNCHER"] == '{"active":1}'
        assert rows["done"]["STATE"] == "Succeeded"
        assert rows["done"]["ACTIVE"] == ""
        assert rows["done"]["WORKERS"] == "2"
        assert rows["done"]["LAUNCHER"] == '{"succeeded":1}'
        assert {k: v for k, v in rows["new"].items() if k not in ("NAME", "AGE")} == {
            "STATE": "",
            "ACTIVE": "",
            "WORKERS": "",
            "LAUNCHER": "",
        }
    wide = {r["NAME"]: r for r in kubectl_table(api_cluster, "mpij", "-n", namespace, "-o", "wide")}
    assert wide["done"]["REASON"] == "MPIJobSucceeded"
    assert wide["running"]["REASON"] == "MPIJobRunning"


def test_categories(api_cluster: LocalCluster, namespace: str) -> None:
    _create(api_cluster, namespace, _job("categorised"))
    listed = api_cluster.kubectl("get", "kubeflow", "-n", namespace, "-o", "name").stdout
    assert listed.split() == ["mpijob.kubeflow.org/categorised"]
    everything = api_cluster.kubectl("get", "all", "-n", namespace, "-o", "name").stdout
    assert "mpijob" not in everything
