"""The MPIJob controller: event handlers, the sync handler and status."""

from mpi_operator.controller.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions

__all__ = ["ControllerOptions", "MPIJobController"]
