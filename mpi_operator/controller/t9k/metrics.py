"""The T9k controller's Prometheus metrics, registered on the registry it is given (as
the Kubeflow controller's, :mod:`~mpi_operator.controller.kubeflow.metrics`)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Histogram


@dataclass(frozen=True, slots=True)
class T9kMetrics:
    reconcile_duration: Histogram

    @classmethod
    def create(cls, registry: CollectorRegistry) -> T9kMetrics:
        return cls(
            reconcile_duration=Histogram(
                "mpi_operator_t9k_reconcile_duration_seconds",
                "Time taken by one sync of a T9k MPIJob, by result",
                ["result"],
                registry=registry,
                buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            )
        )
