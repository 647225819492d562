"""Helpers of the chaos suite (see conftest.py for what it covers and how to run it)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import (
    BinariesMissingError,
    LocalCluster,
)
from devcluster.testing import OperatorProcess, wait_until

FULL = os.environ.get("MPI_CHAOS_FULL", "") not in ("", "0", "false")

Obj = dict[str, Any]

MPIJOBS = "/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
OPERATOR_LABEL = "training.kubeflow.org/operator-name=mpi-operator"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
# Short leases so that a SIGKILLed operator's successor leads within seconds.
LEASE_FLAGS = ("--lease-duration=4", "--renew-deadline=3", "--retry-period=0.5")
LEASE_DURATION = 4.0


def scale(short: int, full: int) -> int:
    return full if FULL else short


def report(**figures: Any) -> None:
    print("CHAOS " + " ".join(f"{k}={v}" for k, v in figures.items()))


# -- objects -------------------------------------------------------------------------


def api(cluster: LocalCluster, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    """One admin call that must succeed; returns the decoded body."""
    status, out = cluster.request(method, path, body, **kw)
    if not 200 <= status < 300:
        raise AssertionError(f"{method} {path}: {status} {out}")
    return out


def create_mpijob(cluster: LocalCluster, ns: str, obj: Obj) -> Obj:
    result: Obj = api(cluster, "POST", MPIJOBS.format(ns=ns), obj)
    return result


def list_items(cluster: LocalCluster, path: str, selector: str | None = None) -> list[Obj]:
    if selector:
        path += "?" + urllib.parse.urlencode({"labelSelector": selector})
    status, body = cluster.request("GET", path)
    if status != 200:
        raise AssertionError(f"GET {path}: {status} {body}")
    items: list[Obj] = body["items"]
    return items


def mpijobs(cluster: LocalCluster, ns: str) -> list[Obj]:
    return list_items(cluster, MPIJOBS.format(ns=ns))


def condition(job: Obj, kind: str) -> Obj | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return dict(c)
    return None


def final_state(job: Obj) -> str | None:
    for kind in ("Succeeded", "Failed"):
        if condition(job, kind):
            return kind
    return None


def wait_final(
    cluster: LocalCluster, ns: str, expected: dict[str, str], timeout: float, what: str = ""
) -> dict[str, Obj]:
    """Waits until every named MPIJob has the expected final condition; returns them."""
    last: dict[str, str | None] = {}

    def done() -> dict[str, Obj] | None:
        jobs = {j["metadata"]["name"]: j for j in mpijobs(cluster, ns)}
        last.clear()
        last.update({n: final_state(jobs[n]) if n in jobs else "missing" for n in expected})
        if all(last[n] == expected[n] for n in expected):
            return jobs
        return None

    try:
        result: dict[str, Obj] = wait_until(done, timeout, what or "every job final", 1.0)
    except TimeoutError as err:
        wrong = {n: s for n, s in last.items() if s != expected[n]}
        raise AssertionError(f"{err}; not as expected: {wrong}") from None
    return result


def delete_all_and_check_no_orphans(cluster: LocalCluster, ns: str, timeout: float = 120) -> None:
    api(cluster, "DELETE", MPIJOBS.format(ns=ns))
    kinds = {
        "pods": "/api/v1/namespaces/{ns}/pods",
        "jobs": "/apis/batch/v1/namespaces/{ns}/jobs",
        "services": "/api/v1/namespaces/{ns}/services",
        "configmaps": "/api/v1/namespaces/{ns}/configmaps",
        "secrets": "/api/v1/namespaces/{ns}/secrets",
    }
    left: dict[str, list[str]] = {}

    def gone() -> bool:
        left.clear()
        if mpijobs(cluster, ns):
            left["mpijobs"] = ["..."]
        for kind, path in kinds.items():
            names = [
                o["metadata"]["name"]
                for o in list_items(cluster, path.format(ns=ns), OPERATOR_LABEL)
            ]
            if names:
                left[kind] = names
        return not left

    try:
        wait_until(gone, timeout, "every child garbage collected", 1.0)
    except TimeoutError as err:
        raise AssertionError(f"{err}: orphans {left}") from None


# -- operator processes --------------------------------------------------------------


def secret_material(cluster: LocalCluster, ns: str) -> set[str]:
    """Fragments of every SSH private key in ``ns``: its base64 (as stored), and the
    base64 lines of the PEM body (as a log would print the decoded key)."""
    found: set[str] = set()
    for secret in list_items(cluster, f"/api/v1/namespaces/{ns}/secrets"):
        data = secret.get("data") or {}
        if "ssh-privatekey" not in data:
            continue
        encoded = data["ssh-privatekey"]
        found.add(encoded[:40])
        pem = base64.b64decode(encoded).decode(errors="replace")
        for line in pem.splitlines():
            if line and not line.startswith("-----") and len(line) >= 32:
                found.add(line[:40])
    return found


def leaks(text: str, material: set[str]) -> list[str]:
    out = []
    if "PRIVATE KEY" in text:
        out.append("PRIVATE KEY")
    out.extend(m for m in material if m in text)
    return out


class Sampler:
    """Calls :meth:`sample` every ``interval`` seconds in a thread while in its ``with``."""

    interval = 0.2

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        raise NotImplementedError


class Operators:
    """Starts ``mpi-operator`` processes; kills them all at teardown, then scans their
    logs (and the namespaces' events and statuses) for SSH private keys."""

    def __init__(self, cluster: LocalCluster, tmp: Path, kubeconfig: Path | None = None) -> None:
        self.cluster = cluster
        self.tmp = tmp
        #: Whom the operators authenticate as (default: the cluster's admin).
        self.kubeconfig = kubeconfig or cluster.kubeconfig
        self.procs: list[OperatorProcess] = []
        self.namespaces: set[str] = set()
        self.material: set[str] = set()

    def start(
        self,
        ns: str,
        *extra: str,
        qps: int = 50,
        burst: int = 100,
        lease: tuple[str, ...] = LEASE_FLAGS,
        kubeconfig: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> OperatorProcess:
        self.namespaces.add(ns)
        proc = OperatorProcess(
            [
                f"--kubeConfig={kubeconfig or self.kubeconfig}",
                f"--namespace={ns}",
                f"--lock-namespace={ns}",
                f"--kube-api-qps={qps}",
                f"--kube-api-burst={burst}",
                "--shutdown-drain-seconds=0.5",
                *lease,
                *extra,
            ],
            self.tmp / f"operator-{len(self.procs)}.log",
            env=env,
        )
        self.procs.append(proc)
        return proc.start()

    def collect_secrets(self) -> None:
        """Remembers the namespaces' keys now (call before deleting the MPIJobs)."""
        for ns in self.namespaces:
            with contextlib.suppress(Exception):
                self.material |= secret_material(self.cluster, ns)

    def crashes(self) -> list[str]:
        """Processes that exited on their own (a SIGKILL sent by the test is not one)."""
        return [
            f"{p.log_path.name} exited {p.poll()}: {p.output()[-1000:]}"
            for p in self.procs
            if p.poll() not in (None, -9)
        ]

    def tracebacks(self) -> list[str]:
        """Log lines with a Python traceback: errors that are not API answers."""
        return [
            f"{proc.log_path.name}: {line[:600]}"
            for proc in self.procs
            for line in proc.output().splitlines()
            if "Traceback" in line
        ]

    def scan(self) -> list[str]:
        self.collect_secrets()
        problems = []
        for proc in self.procs:
            problems += [f"{proc.log_path.name}: {x}" for x in leaks(proc.output(), self.material)]
        for ns in self.namespaces:
            with contextlib.suppress(Exception):
                events = json.dumps(list_items(self.cluster, f"/api/v1/namespaces/{ns}/events"))
                problems += [f"events of {ns}: {x}" for x in leaks(events, self.material)]
                statuses = json.dumps([j.get("status") for j in mpijobs(self.cluster, ns)])
                problems += [f"statuses in {ns}: {x}" for x in leaks(statuses, self.material)]
        return problems

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()


def leading(proc: OperatorProcess) -> bool:
    assert proc.poll() is None, proc.output()[-3000:]
    try:
        return "mpi_operator_is_leader 1.0" in proc.metrics()
    except OSError:
        return False


def wait_leading(proc: OperatorProcess, timeout: float = 60) -> None:
    wait_until(lambda: leading(proc), timeout, "the operator to lead", 0.1)


ProcFactory = Callable[..., OperatorProcess]


@contextlib.contextmanager
def started(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """A test's own cluster: fails the test clearly without the binaries; always stopped."""
    try:
        _ = cluster.bins
    except BinariesMissingError as e:
        pytest.fail(str(e), pytrace=False)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def operators_of_a_test(ops: Operators) -> Iterator[Operators]:
    """Stops the test's operators, prints their logs' tails and fails the test on any
    SSH key material in the logs, events or statuses."""
    try:
        yield ops
    finally:
        ops.stop()
        for proc in ops.procs:
            if proc.proc is not None:
                print(f"--- {proc.log_path.name} (exit {proc.poll()}) ---\n{proc.output()[-3000:]}")
    if ops.cluster.processes["kube-apiserver"].alive():
        problems = ops.scan()
        assert not problems, f"SSH private key material leaked: {problems}"
