"""The controller of T9k-style MPIJobs (``batch.tensorstack.dev/v1beta1``).

Mirrors :mod:`mpi_operator.controller` (informers + rate-limited queue +
workers, a level-triggered sync, a pure status computation) with its own
informers, label selector, queue and metrics, so it runs beside the Kubeflow
controller in one process without either seeing the other's children.
"""

from mpi_operator.controller.t9k.controller import T9kMPIJobController, T9kOptions, crd_installed
from mpi_operator.controller.t9k.discovery import t9k_controller_if_served

__all__ = ["T9kMPIJobController", "T9kOptions", "crd_installed", "t9k_controller_if_served"]
