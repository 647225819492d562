"""The controllers of both MPIJob kinds.

* :mod:`.core`: the reconcile kit both kinds use (owner and adoption, pod creation
  with expectations and slow start, object accessors, the status write);
* :mod:`.kubeflow` and :mod:`.t9k`: each kind's controller, sync handler, state
  machine and children;
* the queue machinery both controllers run on: :mod:`.queue_controller`,
  :mod:`.runner`, :mod:`.handlers`, :mod:`.failures` and :mod:`.options`.
"""

from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions

__all__ = ["ControllerOptions", "MPIJobController"]
