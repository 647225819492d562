"""The controller of Kubeflow MPIJobs (``kubeflow.org/v2beta1``), as the reference
operator v0.8.2 reconciles them: the launcher is a batch Job, the workers are pods.

On the reconcile kit of :mod:`mpi_operator.controller.core`, it keeps what is its own:
the sync handler and its state machine (conditions, status, failure policy, TTL), the
children it gets or creates, and its metrics.
"""

from mpi_operator.controller.kubeflow.controller import MPIJobController

__all__ = ["MPIJobController"]
