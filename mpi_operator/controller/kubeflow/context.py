"""What a Kubeflow MPIJob sync needs: the kit's context plus the caches, settings and
metrics, and the labels that tie children to their job.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from mpi_operator.api.object_model import Obj, metadata_of
from mpi_operator.api.v2beta1 import (
    API_VERSION,
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    KIND,
    OPERATOR_NAME,
    OPERATOR_NAME_LABEL,
    RESTART_ATTEMPT_LABEL,
    MPIJob,
)
from mpi_operator.builders.kubeflow.common import LAUNCHER_SUFFIX, WORKER
from mpi_operator.client import Lister
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.crds import OnDemandCache
from mpi_operator.controller.core.owner import Owner, reference
from mpi_operator.controller.options import ControllerOptions

OPERATOR_SELECTOR = f"{OPERATOR_NAME_LABEL}={OPERATOR_NAME}"
#: The Kind in the ErrResourceExists message of most children: the reference reads it
#: from typed cache objects, where it is empty; we keep its exact text.
NO_KIND = ""


@dataclass(slots=True)
class Listers:
    mpijobs: Lister
    pods: Lister
    jobs: Lister
    services: Lister
    configmaps: Lister
    secrets: Lister
    pod_groups: OnDemandCache | None = None
    """The gang scheduler's PodGroups (with ``--gang-scheduling``), cached once a sync
    needs them and their API is served."""
    priority_classes: Lister | None = None


@dataclass(slots=True, kw_only=True)
class SyncContext(CoreContext):
    listers: Listers
    options: ControllerOptions
    metrics: ControllerMetrics


#: Our worker pods by "<namespace>/<job-name label>": a job's workers, without scanning
#: its namespace or filtering its other pods on every sync.
WORKERS_INDEX = "mpijob-workers"


def worker_selector(job_name: str) -> str:
    """The label selector of the job's worker pods that :func:`workers_index` files."""
    return (
        f"{OPERATOR_NAME_LABEL}={OPERATOR_NAME},{JOB_NAME_LABEL}={job_name},"
        f"{JOB_ROLE_LABEL}={WORKER}"
    )


def workers_index(obj: Obj) -> list[str]:
    meta = metadata_of(obj)
    labels = meta.get("labels") or {}
    name = labels.get(JOB_NAME_LABEL)
    if (
        not name
        or labels.get(JOB_ROLE_LABEL) != WORKER
        or labels.get(OPERATOR_NAME_LABEL) != OPERATOR_NAME
    ):
        return []
    return [f"{meta.get('namespace', '')}/{name}"]


def job_reference(shared: Obj) -> Obj:
    """The MPIJob as events refer to it; list items may lack apiVersion and kind."""
    return reference(shared, API_VERSION, KIND)


def owner_of(shared: Obj) -> Owner:
    return Owner.of(shared, API_VERSION, KIND, {OPERATOR_NAME_LABEL: OPERATOR_NAME})


def restart_attempt(job: MPIJob) -> int:
    """How many times the failure policy restarted the job: the children's generation."""
    return (job.status.restart_count if job.status else None) or 0


def attempt_of(obj: Obj) -> int:
    """The restart attempt a pod or launcher Job was made for (0: before any restart)."""
    labels = metadata_of(obj).get("labels") or {}
    try:
        return int(labels.get(RESTART_ATTEMPT_LABEL) or 0)
    except ValueError:
        return 0


def with_restart_attempt(obj: Obj, job: MPIJob) -> Obj:
    """Labels a child made after a restart (ours); before any, children stay as upstream's."""
    attempt = restart_attempt(job)
    if attempt:
        meta = obj.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), RESTART_ATTEMPT_LABEL: str(attempt)}
    return obj


# ------------------------ metrics ------------------------
#
# The operator's Prometheus metrics, with the reference operator's names.
#
# Each controller gets its own set registered on the registry it is given, so
# that tests can run several controllers without name clashes.


@dataclass(frozen=True, slots=True)
class ControllerMetrics:
    jobs_created: Counter
    jobs_successful: Counter
    jobs_failed: Counter
    job_info: Gauge
    reconcile_duration: Histogram
    job_duration: Histogram

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> ControllerMetrics:
        registry = REGISTRY if registry is None else registry
        return cls(
            jobs_created=Counter(
                "mpi_operator_jobs_created",
                "Counts number of MPI jobs created",
                registry=registry,
            ),
            jobs_successful=Counter(
                "mpi_operator_jobs_successful",
                "Counts number of MPI jobs successful",
                registry=registry,
            ),
            jobs_failed=Counter(
                "mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=registry
            ),
            job_info=Gauge(
                "mpi_operator_job_info",
                "Information about MPIJob",
                ["launcher", "namespace"],
                registry=registry,
            ),
            reconcile_duration=Histogram(
                "mpi_operator_reconcile_duration_seconds",
                "Time taken by one sync of an MPIJob, by result",
                ["result"],
                registry=registry,
                buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            ),
            job_duration=Histogram(
                "mpi_operator_job_duration_seconds",
                "Time from an MPIJob's start to its completion, by final state",
                ["result"],
                registry=registry,
                buckets=(10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400),
            ),
        )

    def forget_job(self, namespace: str, name: str) -> None:
        """Removes the deleted MPIJob's ``mpi_operator_job_info`` series (labelled with its
        launcher Job's name), so the gauge holds only existing jobs."""
        with contextlib.suppress(KeyError):  # KeyError: the job never had a launcher
            self.job_info.remove(name + LAUNCHER_SUFFIX, namespace)
