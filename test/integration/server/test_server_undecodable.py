"""One MPIJob the JSON decoder refuses does not stop the operator for anyone.

kube-apiserver stores an MPIJob whose ``Worker.template.metadata`` (free-form) holds a
field nested 1,100 deep; orjson refuses past 1,024. Before, the operator's list of
MPIJobs failed as a whole (``502 ... is not a JSON object``): it exited at start and no
MPIJob anywhere got a status. Now the job is skipped, named in a Warning event and
counted, and every other MPIJob, in its namespace or another, runs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from devcluster import LocalCluster
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import OperatorProcess, StartOperator, wait_until

DEPTH = 1100
METRIC = 'mpi_operator_undecodable_objects_total{resource="mpijobs.v2beta1.kubeflow.org"}'


def _deep_mpijob(name: str) -> bytes:
    """A valid MPIJob with a field nested ``DEPTH`` deep in the worker template's metadata,
    written by hand: Python's own json module refuses that depth too."""
    job = pi_mpijob(name)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"] = {"deep": "DEEP"}
    nested = '{"a":' * DEPTH + '"bottom"' + "}" * DEPTH
    body = json.dumps(job).replace('"DEEP"', nested)
    return body.encode()


def _post_raw(cluster: LocalCluster, ns: str, body: bytes) -> None:
    request = urllib.request.Request(
        f"{cluster.server}/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, context=cluster.ssl_context(), timeout=30) as r:
            assert r.status == 201
    except urllib.error.HTTPError as err:
        raise AssertionError(f"kube-apiserver refused the deep MPIJob: {err.read()!r}") from err


def _create(cluster: LocalCluster, ns: str, name: str) -> None:
    cluster.kubectl("-n", ns, "create", "-f", "-", input=json.dumps(pi_mpijob(name)))


def _created(cluster: LocalCluster, ns: str, name: str, proc: OperatorProcess) -> bool:
    """Whether the MPIJob has the condition Created (read by kubectl's jsonpath: Python's
    json module cannot read the deep ones either)."""
    assert proc.poll() is None, f"operator exited {proc.poll()}:\n{proc.output()[-3000:]}"
    created = '{.status.conditions[?(@.type=="Created")].status}'
    out = cluster.kubectl("-n", ns, "get", "mpijob", name, "-o", f"jsonpath={created}")
    return out.stdout.strip() == "True"


def _undecodable_events(cluster: LocalCluster, ns: str) -> dict[str, dict[str, Any]]:
    """The Warning events ``Undecodable`` in ``ns``, by the name of their object."""
    status, events = cluster.request("GET", f"/api/v1/namespaces/{ns}/events")
    assert status == 200, events
    return {
        e["involvedObject"]["name"]: e
        for e in events["items"]
        if e.get("reason") == "Undecodable" and e.get("type") == "Warning"
    }


def _counted(proc: OperatorProcess) -> float:
    for line in proc.metrics().splitlines():
        if line.startswith(METRIC):
            return float(line.split()[-1])
    return 0.0


def test_a_deep_mpijob_is_skipped_and_named_while_every_other_job_runs(
    api_cluster: LocalCluster, namespace: str, start_operator: StartOperator
) -> None:
    other = api_cluster.create_namespace("undecodable-other")
    try:
        # Stored before the operator starts (its first list), beside a good job in the
        # same namespace and one in another.
        _post_raw(api_cluster, namespace, _deep_mpijob("deep"))
        _create(api_cluster, namespace, "neighbour")
        _create(api_cluster, other, "elsewhere")

        proc = start_operator(
            f"--kubeConfig={api_cluster.kubeconfig}",
            f"--lock-namespace={namespace}",
            f"--namespace={namespace},{other}",
        )
        for ns, name in ((namespace, "neighbour"), (other, "elsewhere")):
            wait_until(
                lambda ns=ns, name=name: _created(api_cluster, ns, name, proc),
                60,
                f"{ns}/{name} Created",
            )
        event = wait_until(
            lambda: _undecodable_events(api_cluster, namespace).get("deep"),
            30,
            "a Warning event on the deep MPIJob",
        )
        assert event["involvedObject"]["kind"] == "MPIJob"
        assert event["involvedObject"]["uid"]
        assert "depth" in event["message"] and f"{namespace}/deep" in event["message"]
        wait_until(lambda: _counted(proc) == 1, 30, "the deep MPIJob counted")

        # One stored while the operator watches: skipped by the watch the same way, and
        # a job created after it still runs.
        _post_raw(api_cluster, namespace, _deep_mpijob("deep-later"))
        _create(api_cluster, namespace, "after")
        wait_until(
            lambda: "deep-later" in _undecodable_events(api_cluster, namespace),
            30,
            "a Warning event on the MPIJob stored later",
        )
        wait_until(lambda: _created(api_cluster, namespace, "after", proc), 60, "'after' Created")
        wait_until(lambda: _counted(proc) == 2, 30, "the later one counted")

        # Neither deep job was given a status, and the operator stayed healthy.
        for name in ("deep", "deep-later"):
            assert not _created(api_cluster, namespace, name, proc)
        assert proc.healthz() == (200, "ok")
        skipped = [r for r in proc.records() if r.get("event", "").startswith("skipping an object")]
        assert sorted(r["object"] for r in skipped) == [
            f"{namespace}/deep",
            f"{namespace}/deep-later",
        ]
        assert "mpi_operator_event_loop_lag_seconds_count" in proc.metrics()
    finally:
        api_cluster.delete_namespace(other)
