"""The generated MPIJob CRD through the real kubectl: admission (schema, enums, CEL
rules), the status subresource, printer columns, short name and category."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from crd_cases import BAD, GOOD, mpijob
from examples_support import kubectl_table

from devcluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "v2beta1").glob("*/*.yaml"))


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


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_mpijob_is_rejected_naming_the_field(
    api_cluster: LocalCluster, namespace: str, case: str
) -> None:
    obj, expected = BAD[case]
    code, output = _dry_run(api_cluster, namespace, obj)
    assert code != 0, output
    assert expected in output, output


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
    _create(api_cluster, namespace, mpijob(runPolicy={}))
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
    _create(api_cluster, namespace, mpijob(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
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
    _create(api_cluster, namespace, mpijob())
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
    _create(api_cluster, namespace, mpijob())
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
        "state": "Created",
        "restartCount": 1,
        "lastFailure": {
            "pod": "job-worker-0",
            "replicaType": "Worker",
            "container": "worker",
            "exitCode": 137,
            "reason": "OOMKilled",
            "podReason": "Evicted",
            "message": "worker job-worker-0 container worker terminated: OOMKilled (exit 137)",
            "time": "2026-01-01T00:00:30Z",
        },
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
    _create(api_cluster, namespace, mpijob("running", workers=4))
    _create(api_cluster, namespace, mpijob("done", workers=2))
    _create(api_cluster, namespace, mpijob("new", workers=None))
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
    _create(api_cluster, namespace, mpijob("categorised"))
    listed = api_cluster.kubectl("get", "kubeflow", "-n", namespace, "-o", "name").stdout
    assert listed.split() == ["mpijob.kubeflow.org/categorised"]
    everything = api_cluster.kubectl("get", "all", "-n", namespace, "-o", "name").stdout
    assert "mpijob" not in everything


def test_explain_states_what_the_ttl_deletes_by_default(api_cluster: LocalCluster) -> None:
    """`kubectl explain` with the group-qualified name (the T9k kind shares the plural)."""
    out = api_cluster.kubectl(
        "explain", "mpijobs.kubeflow.org.spec.runPolicy.ttlSecondsAfterFinished"
    ).stdout
    text = " ".join(out.split())
    assert "before its launcher Job (and so the launcher pod) is deleted" in text
    assert "the MPIJob and its other children stay" in text
