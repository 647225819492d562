"""The operator's Prometheus metrics, with the reference operator's names.

Each controller gets its own set registered on the registry it is given, so
that tests can run several controllers without name clashes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from mpi_operator.builders.kubeflow.common import LAUNCHER_SUFFIX


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
