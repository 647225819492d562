"""The RBAC test's machinery: the deploy file's roles as (apiGroup, resource, verb)
triples, an operator run under the manifests' ServiceAccount that fails fast on any
denial (read from the audit log), and the helpers its scenarios share."""

from __future__ import annotations

import contextlib
import copy
import json
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from chaos_support import LEASE_FLAGS, Obj, api, list_items
from examples_support import DEPLOY, docs  # test/e2e, on pytest's pythonpath

from devcluster import LocalCluster
from devcluster.audit import SERVICE_ACCOUNTS, audit_code
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.api.v2beta1 import parse, set_defaults

Triple = tuple[str, str, str]
"""(apiGroup, resource[/subresource], verb)"""

OPERATOR_NS = "mpi-operator"
OPERATOR_USER = f"system:serviceaccount:{OPERATOR_NS}:mpi-operator"
LOCK = "mpi-operator"
COSCHEDULER = "scheduler-plugins-scheduler"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
#: ``spec.managedBy`` of a launcher Job that the Job controller must leave alone.
STAND_IN = "kubeflow.org/rbac-test-stand-in"
FINALIZERS: Triple = ("kubeflow.org", "mpijobs/finalizers", "update")
#: Checked at admission, never a request of its own: proven by removal only.
ADMISSION_ONLY = {FINALIZERS}
#: Requests every authenticated user may make (system:basic-user, discovery).
NEEDS_NO_ROLE = {("authorization.k8s.io", "selfsubjectaccessreviews", "create")}

#: Short mode's removals: one verb per resource kind, the one with the most
#: specific trigger, and the deletes of the TTL and of a restart (the full mode
#: removes every granted triple in turn).
SHORT_REMOVALS: list[Triple] = [
    ("kubeflow.org", "mpijobs", "watch"),
    ("kubeflow.org", "mpijobs", "delete"),
    ("kubeflow.org", "mpijobs/status", "update"),
    FINALIZERS,
    ("", "pods", "delete"),
    ("", "services", "update"),
    ("", "configmaps", "patch"),
    ("", "secrets", "update"),
    ("batch", "jobs", "update"),
    ("batch", "jobs", "delete"),
    ("batch", "jobs/status", "update"),
    ("", "events", "patch"),
    ("scheduling.volcano.sh", "podgroups", "delete"),
    ("scheduling.x-k8s.io", "podgroups", "update"),
    ("scheduling.k8s.io", "podgroups", "create"),
    ("scheduling.k8s.io", "priorityclasses", "list"),
    ("coordination.k8s.io", "leases", "create"),
]

DEADLINE = 60.0
"""How long a scenario may take with every right (it takes a few seconds)."""


# -- the roles as triples ---------------------------------------------------------------


def rbac_objects() -> list[Obj]:
    """The deploy file's ServiceAccount and the roles bound to it, with their bindings."""
    objects = docs(DEPLOY)
    bound = {
        (b["roleRef"]["kind"], b["roleRef"]["name"])
        for b in objects
        if b["kind"] in ("ClusterRoleBinding", "RoleBinding")
        and any(
            s.get("kind") == "ServiceAccount" and s.get("name") == "mpi-operator"
            for s in b.get("subjects") or []
        )
    }
    return [
        o
        for o in objects
        if o["kind"] in ("Namespace", "ServiceAccount", "ClusterRoleBinding", "RoleBinding")
        or (o["kind"], o["metadata"]["name"]) in bound
    ]


def roles(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if o["kind"] in ("ClusterRole", "Role")]


def triples(role: Obj) -> set[Triple]:
    return {
        (group, resource, verb)
        for rule in role.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


def without(role: Obj, removed: Triple) -> Obj:
    """``role`` with one (group, resource, verb) no longer allowed (other pairs of a
    rule that named it keep all their verbs)."""
    group, resource, verb = removed
    out = copy.deepcopy(role)
    rules: list[Obj] = []
    for rule in out.get("rules") or []:
        if (
            group not in rule.get("apiGroups", [])
            or resource not in rule.get("resources", [])
            or verb not in rule.get("verbs", [])
        ):
            rules.append(rule)
            continue
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                verbs = [v for v in rule["verbs"] if (g, r, v) != removed]
                if verbs:
                    rules.append({**rule, "apiGroups": [g], "resources": [r], "verbs": verbs})
    out["rules"] = rules
    return out


def event_triple(event: Obj) -> Triple | None:
    ref = event.get("objectRef")
    if not ref or not ref.get("resource"):
        return None  # a non-resource URL: discovery, /version
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (ref.get("apiGroup") or "", resource, str(event.get("verb")))


def denial(event: Obj) -> str | None:
    """Why the API server refused a request of the operator (RBAC, or the
    owner-references admission check), or None."""
    code = audit_code(event)
    if code not in (401, 403):
        return None
    message = str((event.get("responseStatus") or {}).get("message") or "")
    return f"{event.get('verb')} {event.get('requestURI')} -> {code} {message[:200]}"


# -- the cluster and the operator's identity --------------------------------------------


@dataclass
class Rbac:
    cluster: LocalCluster
    tmp: Path
    objects: list[Obj]
    kubeconfig: Path
    granted: set[Triple] = field(default_factory=set)
    role_of: dict[Triple, Obj] = field(default_factory=dict)

    def apply_roles(self, removed: Triple | None = None) -> None:
        docs_ = [without(r, removed) if removed in triples(r) else r for r in roles(self.objects)]
        self.cluster.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=rbac-test",
            "-f",
            "-",
            input=yaml.safe_dump_all(docs_),
        )
        if removed is not None:
            wait_until(lambda: not self.allowed(removed), 30, f"{removed} revoked")
        else:
            missing: list[Triple] = []

            def all_allowed() -> bool:
                missing[:] = [t for t in sorted(self.granted) if not self.allowed(t)]
                return not missing

            wait_until(all_allowed, 30, f"every right granted (missing: {missing})")

    def allowed(self, t: Triple) -> bool:
        group, resource, verb = t
        plural, _, sub = resource.partition("/")
        attrs: Obj = {"group": group, "resource": plural, "subresource": sub, "verb": verb}
        if self.role_of[t]["kind"] == "Role":
            attrs["namespace"] = self.role_of[t]["metadata"]["namespace"]
            attrs["name"] = LOCK
        elif plural != "priorityclasses":
            attrs["namespace"] = "default"
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": OPERATOR_USER,
                "groups": [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{OPERATOR_NS}"],
                "resourceAttributes": attrs,
            },
        }
        answer = api(
            self.cluster, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review
        )
        return bool(answer["status"].get("allowed"))


# -- one run of (part of) the suite ------------------------------------------------------


class SuiteFailed(Exception):
    """The operator refused to start, or was denied a request."""

    def __init__(self, reason: str, denied: Triple | None = None, text: str = "") -> None:
        super().__init__(reason)
        self.denied = denied
        """The triple of the denied request (None: the operator exited)."""
        self.text = text
        """The denial's message, or the operator's last error line."""

    def explained_by(self, removed: Triple) -> bool:
        """Whether this failure is the removal's doing (not, say, a crash)."""
        if self.denied is not None:
            admission = removed == FINALIZERS and "blockOwnerDeletion" in self.text
            return self.denied == removed or admission
        group, resource, _ = removed
        return "RBAC forbids" in self.text and f"{resource}.{group or 'core'}" in self.text


class Run:
    """One operator process under the ServiceAccount, and the scenarios it serves."""

    def __init__(self, rbac: Rbac, flags: tuple[str, ...], name: str) -> None:
        self.rbac = rbac
        self.cluster = rbac.cluster
        self.flags = flags
        self.name = name
        self.namespaces: list[str] = []
        self.proc: OperatorProcess | None = None
        self.audit_start = 0
        self._cursor = 0

    def namespace(self, prefix: str) -> str:
        ns = self.cluster.create_namespace(prefix)
        self.namespaces.append(ns)
        return ns

    def start(self) -> None:
        # Deleted before every run: each operator creates its Lease.
        self.cluster.request(
            "DELETE", f"/apis/coordination.k8s.io/v1/namespaces/{OPERATOR_NS}/leases/{LOCK}"
        )
        self.audit_start = self._cursor = self.cluster.audit_offset()
        self.proc = OperatorProcess(
            [
                f"--kubeConfig={self.rbac.kubeconfig}",
                f"--lock-namespace={OPERATOR_NS}",
                "--kube-api-qps=50",
                "--kube-api-burst=100",
                "--shutdown-drain-seconds=0.5",
                *LEASE_FLAGS,
                *self.flags,
            ],
            self.rbac.tmp / f"{self.name}-{uuid.uuid4().hex[:6]}.log",
        ).start()

    def check(self) -> None:
        """Raises SuiteFailed when the operator exited or was denied anything."""
        assert self.proc is not None and self.cluster.audit_log is not None
        with self.cluster.audit_log.open("rb") as f:
            f.seek(self._cursor)
            data = f.read()
        end = self._cursor + data.rfind(b"\n") + 1  # whole lines only
        events = self.cluster.audit_events(self._cursor, end, user=OPERATOR_USER)
        self._cursor = end
        for event in events:
            reason = denial(event)
            if reason:
                message = str((event.get("responseStatus") or {}).get("message") or "")
                raise SuiteFailed(f"denied: {reason}", event_triple(event), message)
        code = self.proc.poll()
        if code is not None:
            errors = [ln for ln in self.proc.output().splitlines() if '"error"' in ln] or ["?"]
            raise SuiteFailed(f"operator exited {code}: {errors[-1][:300]}", None, errors[-1])

    def wait(self, check: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
        """Polls ``check`` (and :meth:`check`) until it returns something truthy."""
        deadline = time.monotonic() + timeout
        while True:
            self.check()
            result = check()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.name}: timed out after {timeout:.0f}s: {what}")
            time.sleep(0.2)

    def stop(self, graceful: bool) -> None:
        if self.proc is not None:
            if graceful and self.proc.poll() is None:
                # Releases the Lease (an update) and closes the watches (audited then).
                self.proc.signal(signal.SIGTERM)
                with contextlib.suppress(Exception):
                    self.proc.wait(timeout=20)
            self.proc.kill()
        for ns in self.namespaces:
            # The MPIJobs first, so that no later operator syncs them in a
            # terminating namespace (whose creates would be refused).
            self.cluster.request("DELETE", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")
            self.cluster.delete_namespace(ns)
        for ns in self.namespaces:
            wait_until(
                lambda ns=ns: (
                    not list_items(
                        self.cluster, f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs"
                    )
                ),
                30,
                f"the MPIJobs of {ns} deleted",
            )

    def log_tail(self) -> str:
        return self.proc.output()[-3000:] if self.proc is not None else ""


# -- helpers of the scenarios -------------------------------------------------------------


def get(cluster: LocalCluster, path: str) -> Obj | None:
    status, body = cluster.request("GET", path)
    return body if status == 200 else None


def create(cluster: LocalCluster, path: str, obj: Obj) -> Obj:
    result: Obj = api(cluster, "POST", path, obj)
    return result


def merge_patch(cluster: LocalCluster, path: str, patch: Obj) -> None:
    api(cluster, "PATCH", path, patch, content_type="application/merge-patch+json")


def labelled(obj: Obj | None) -> bool:
    return bool(obj and OPERATOR_LABEL in (obj["metadata"].get("labels") or {}))


def condition(job: Obj | None, kind: str) -> bool:
    conds = ((job or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conds)


def mpijob_path(ns: str, name: str = "") -> str:
    return f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs" + (f"/{name}" if name else "")


def succeeded(run: Run, ns: str, name: str) -> Callable[[], bool]:
    def check() -> bool:
        job = get(run.cluster, mpijob_path(ns, name))
        assert not condition(job, "Failed"), json.dumps((job or {}).get("status"))
        return condition(job, "Succeeded")

    return check


def _live_workers(run: Run, ns: str, name: str) -> list[Obj]:
    pods = list_items(
        run.cluster,
        f"/api/v1/namespaces/{ns}/pods",
        f"training.kubeflow.org/job-name={name},training.kubeflow.org/job-role=worker",
    )
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def workers_gone(run: Run, ns: str, name: str) -> Callable[[], bool]:
    return lambda: not _live_workers(run, ns, name)


def workers_exist(run: Run, ns: str, name: str) -> Callable[[], bool]:
    return lambda: bool(_live_workers(run, ns, name))


def parsed(obj: Obj) -> Any:
    return set_defaults(parse(obj))


class Binder:
    """Binds the pods handed to a scheduler that is not running here (the
    scheduler-plugins coscheduler): every pending pod of ``scheduler`` goes to a node."""

    def __init__(self, cluster: LocalCluster, ns: str, scheduler: str) -> None:
        self.cluster, self.ns, self.scheduler = cluster, ns, scheduler
        self.bound: set[str] = set()

    def __call__(self) -> None:
        for pod in list_items(self.cluster, f"/api/v1/namespaces/{self.ns}/pods"):
            name = pod["metadata"]["name"]
            if pod["spec"].get("schedulerName") != self.scheduler or pod["spec"].get("nodeName"):
                continue
            if name in self.bound:
                continue
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "kwok-node-0"},
            }
            status, _ = self.cluster.request(
                "POST", f"/api/v1/namespaces/{self.ns}/pods/{name}/binding", binding
            )
            if status in (200, 201):
                self.bound.add(name)
