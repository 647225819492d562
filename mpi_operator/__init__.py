"""mpi-operator: runs MPIJob custom resources on Kubernetes."""

__version__ = "0.1.0"
