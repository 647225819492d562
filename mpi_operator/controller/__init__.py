"""The controllers of both MPIJob kinds.

* the loop both controllers run on, which knows no MPIJob: :mod:`.queue_controller`
  (informers to queue, event handlers, options) and :mod:`.runner` (workers, retries,
  failing syncs);
* :mod:`.core`: the reconcile kit both kinds use (per-job state, owner and adoption,
  pod creation and deletion, object accessors, the status write);
* :mod:`.kubeflow` and :mod:`.t9k`: each kind's controller, sync, children and pure
  status.
"""

from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions

__all__ = ["ControllerOptions", "MPIJobController"]
