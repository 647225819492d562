"""Fluent builders of the objects a sync reads, in the style of JobSet's test wrappers:
``MPIJobBuilder("pi").workers(2).suspend().obj()``.

They build the JSON the API server would hold (plain dicts), with the labels and
owner references spelled out as the wire format has them, so that they do not
follow the operator's internal module layout.
"""

from __future__ import annotations

import copy
from typing import Any, Self

Obj = dict[str, Any]

NAMESPACE = "default"
KUBEFLOW_API = "kubeflow.org/v2beta1"
T9K_API = "batch.tensorstack.dev/v1beta1"

KF = "training.kubeflow.org/"
KF_OPERATOR = {KF + "operator-name": "mpi-operator"}
T9K = "batch.tensorstack.dev/"
T9K_OPERATOR = {T9K + "operator-name": "mpi-operator"}

#: A fixed wall-clock instant the tests' clocks start at (FakeClock's default).
T0 = "2026-01-01T00:00:00Z"


def pod_status(phase: str, ready: bool = False) -> Obj:
    """A pod's status in ``phase``, Ready or not (for :meth:`SyncWorld.change`)."""
    status: Obj = {"phase": phase}
    if phase == "Running":
        status["startTime"] = T0
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return status


def owner_ref(owner: Obj) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class _Builder:
    def __init__(self, obj: Obj) -> None:
        self._obj = obj

    @property
    def meta(self) -> Obj:
        meta: Obj = self._obj["metadata"]
        return meta

    def labels(self, **labels: str) -> Self:
        self.meta.setdefault("labels", {}).update(labels)
        return self

    def label(self, key: str, value: str) -> Self:
        self.meta.setdefault("labels", {})[key] = value
        return self

    def uid(self, uid: str) -> Self:
        self.meta["uid"] = uid
        return self

    def owned_by(self, owner: Obj | None) -> Self:
        """Controlled by ``owner``; None: no controller at all (an orphan)."""
        if owner is None:
            self.meta.pop("ownerReferences", None)
        else:
            self.meta["ownerReferences"] = [owner_ref(owner)]
        return self

    def terminating(self) -> Self:
        self.meta["deletionTimestamp"] = T0
        return self

    def status(self, **fields: Any) -> Self:
        self._obj.setdefault("status", {}).update(fields)
        return self

    def obj(self) -> Obj:
        return copy.deepcopy(self._obj)


def _container(name: str = "main") -> Obj:
    return {"name": name, "image": "mpioperator/mpi-pi:openmpi"}


# -- MPIJobs ---------------------------------------------------------------------------
class MPIJobBuilder(_Builder):
    """A Kubeflow ``kubeflow.org/v2beta1`` MPIJob (one worker by default)."""

    def __init__(self, name: str = "pi", namespace: str = NAMESPACE) -> None:
        super().__init__(
            {
                "apiVersion": KUBEFLOW_API,
                "kind": "MPIJob",
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                "spec": {
                    "mpiReplicaSpecs": {
                        "Launcher": {
                            "replicas": 1,
                            "template": {"spec": {"containers": [_container()]}},
                        },
                        "Worker": {
                            "replicas": 1,
                            "template": {"spec": {"containers": [_container()]}},
                        },
                    }
                },
            }
        )

    @property
    def spec(self) -> Obj:
        spec: Obj = self._obj["spec"]
        return spec

    def run_policy(self, **fields: Any) -> Self:
        self.spec.setdefault("runPolicy", {}).update(fields)
        return self

    def workers(self, replicas: int) -> Self:
        self.spec["mpiReplicaSpecs"]["Worker"]["replicas"] = replicas
        return self

    def launchers(self, replicas: int) -> Self:
        self.spec["mpiReplicaSpecs"]["Launcher"]["replicas"] = replicas
        return self

    def suspend(self, suspended: bool = True) -> Self:
        return self.run_policy(suspend=suspended)

    def clean_pod_policy(self, policy: str) -> Self:
        return self.run_policy(cleanPodPolicy=policy)

    def wait_for_workers_ready(self) -> Self:
        self.spec["launcherCreationPolicy"] = "WaitForWorkersReady"
        return self

    def managed_by(self, controller: str) -> Self:
        return self.run_policy(managedBy=controller)

    def failure_policy(self, max_restarts: int = 0, *rules: Obj) -> Self:
        policy: Obj = {"maxRestarts": max_restarts}
        if rules:
            policy["rules"] = list(rules)
        return self.run_policy(failurePolicy=policy)

    def ttl_after_finished(self, seconds: int, policy: str = "MPIJob") -> Self:
        return self.run_policy(
            ttlSecondsAfterFinished=seconds, ttlSecondsAfterFinishedPolicy=policy
        )

    def workers_ready_timeout(self, seconds: int) -> Self:
        return self.run_policy(workersReadyTimeoutSeconds=seconds)

    def condition(
        self, type_: str, status: str = "True", reason: str = "", at: str = T0, message: str = ""
    ) -> Self:
        conditions = self._obj.setdefault("status", {}).setdefault("conditions", [])
        conditions.append(
            {
                "type": type_,
                "status": status,
                "reason": reason or f"MPIJob{type_}",
                "message": message or f"MPIJob {type_}",
                "lastUpdateTime": at,
                "lastTransitionTime": at,
            }
        )
        return self

    def created(self, at: str = T0) -> Self:
        """As the operator left it after its first sync: Created, started."""
        return self.condition("Created", at=at).status(startTime=at)

    def running(self, at: str = T0) -> Self:
        return self.created(at).condition("Running", at=at)

    def succeeded(self, at: str = T0) -> Self:
        return self.created(at).condition("Succeeded", at=at).status(completionTime=at)

    def failed(self, at: str = T0) -> Self:
        return self.created(at).condition("Failed", at=at).status(completionTime=at)

    def restarted(self, count: int) -> Self:
        return self.status(restartCount=count).condition("Restarting", reason="MPIJobRestarting")


class T9kJobBuilder(_Builder):
    """A T9k ``batch.tensorstack.dev/v1beta1`` MPIJob (one worker by default)."""

    def __init__(self, name: str = "pi", namespace: str = NAMESPACE) -> None:
        super().__init__(
            {
                "apiVersion": T9K_API,
                "kind": "MPIJob",
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                "spec": {
                    "worker": {
                        "replicas": 1,
                        "cmd": ["./pi"],
                        "template": {"spec": {"containers": [_container("mpi-worker")]}},
                    }
                },
            }
        )

    @property
    def spec(self) -> Obj:
        spec: Obj = self._obj["spec"]
        return spec

    def workers(self, replicas: int) -> Self:
        self.spec["worker"]["replicas"] = replicas
        return self

    def no_command(self) -> Self:
        del self.spec["worker"]["cmd"]
        return self

    def pause(self, paused: bool = True) -> Self:
        self.spec.setdefault("runMode", {})["pause"] = {"enabled": paused}
        return self

    def clean_up_workers(self, policy: str | bool) -> Self:
        self.spec.setdefault("runPolicy", {})["cleanUpWorkers"] = policy
        return self

    def t9k_scheduler(self, queue: str = "default") -> Self:
        self.spec["scheduler"] = {"t9kScheduler": {"queue": queue}}
        return self

    def phase(self, phase: str) -> Self:
        return self.status(phase=phase)

    def condition(self, type_: str, status: str = "True", reason: str = "") -> Self:
        conditions = self._obj.setdefault("status", {}).setdefault("conditions", [])
        conditions.append(
            {"type": type_, "status": status, "reason": reason, "lastTransitionTime": T0}
        )
        return self


# -- pods and batch Jobs ---------------------------------------------------------------
class PodBuilder(_Builder):
    """A pod; start from :meth:`worker`, :meth:`t9k` or :meth:`of_job`."""

    def __init__(self, name: str, namespace: str = NAMESPACE) -> None:
        super().__init__(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                "spec": {"containers": [_container()]},
                "status": {"phase": "Pending"},
            }
        )

    @classmethod
    def worker(cls, job: Obj, index: int) -> PodBuilder:
        """Worker ``index`` of a Kubeflow MPIJob, labelled and controlled as the operator makes it."""
        meta = job["metadata"]
        pod = cls(f"{meta['name']}-worker-{index}", meta["namespace"]).owned_by(job)
        return pod.labels(
            **KF_OPERATOR,
            **{
                KF + "job-name": meta["name"],
                KF + "job-role": "worker",
                KF + "replica-type": "worker",
                KF + "replica-index": str(index),
            },
        )

    @classmethod
    def t9k(cls, job: Obj, role: str, index: int = 0) -> PodBuilder:
        """The launcher (``role="launcher"``) or worker ``index`` of a T9k MPIJob."""
        meta = job["metadata"]
        name = (
            f"{meta['name']}-launcher" if role == "launcher" else f"{meta['name']}-worker-{index}"
        )
        pod = cls(name, meta["namespace"]).owned_by(job)
        return pod.labels(
            **T9K_OPERATOR,
            **{
                T9K + "job-name": meta["name"],
                T9K + "replica-type": role,
                T9K + "replica-index": str(index),
            },
        )

    @classmethod
    def of_job(cls, batch_job: Obj, suffix: str = "x7k2p") -> PodBuilder:
        """A pod of a batch Job (the launcher's pod)."""
        meta = batch_job["metadata"]
        return cls(f"{meta['name']}-{suffix}", meta["namespace"]).owned_by(batch_job)

    def attempt(self, attempt: int) -> Self:
        return self.label(KF + "restart-attempt", str(attempt))

    def phase(self, phase: str) -> Self:
        return self.status(phase=phase)

    def running(self) -> Self:
        return self.status(phase="Running", startTime=T0)

    def ready(self) -> Self:
        self.running()
        return self.status(conditions=[{"type": "Ready", "status": "True"}])

    def succeeded(self) -> Self:
        return self.status(phase="Succeeded")

    def failed(self, exit_code: int = 1, reason: str = "Error", container: str = "main") -> Self:
        terminated = {"exitCode": exit_code, "reason": reason, "finishedAt": T0}
        return self.status(
            phase="Failed",
            containerStatuses=[{"name": container, "state": {"terminated": terminated}}],
        )

    def evicted(self) -> Self:
        return self.status(phase="Failed", reason="Evicted", message="node low on memory")


class BatchJobBuilder(_Builder):
    """A ``batch/v1`` Job: the Kubeflow launcher."""

    def __init__(self, name: str, namespace: str = NAMESPACE) -> None:
        super().__init__(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                "spec": {"template": {"spec": {"containers": [_container()]}}},
                "status": {},
            }
        )

    @classmethod
    def launcher(cls, job: Obj) -> BatchJobBuilder:
        meta = job["metadata"]
        built = cls(f"{meta['name']}-launcher", meta["namespace"]).owned_by(job)
        return built.labels(**KF_OPERATOR)

    def attempt(self, attempt: int) -> Self:
        return self.label(KF + "restart-attempt", str(attempt))

    def suspended(self, suspended: bool = True) -> Self:
        self._obj["spec"]["suspend"] = suspended
        return self

    def _condition(self, type_: str, reason: str = "") -> Self:
        condition = {"type": type_, "status": "True", "reason": reason, "message": ""}
        self._obj["status"].setdefault("conditions", []).append(condition)
        return self

    def complete(self, at: str = T0) -> Self:
        return self._condition("Complete").status(succeeded=1, completionTime=at)

    def failed(self, reason: str = "BackoffLimitExceeded") -> Self:
        return self._condition("Failed", reason).status(failed=1)

    def started(self, at: str = T0) -> Self:
        return self.status(startTime=at)


class ChildBuilder(_Builder):
    """Any other child (Service, ConfigMap, Secret, PodGroup) by kind and name."""

    def __init__(
        self, kind: str, name: str, namespace: str = NAMESPACE, api_version: str = "v1"
    ) -> None:
        super().__init__(
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}-{kind}"},
            }
        )
