"""A typed Python client of MPIJobs, for notebooks, pipelines and scripts.

It needs only pydantic, PyYAML and the ``kubernetes`` package (``pip install
./sdk`` or ``pip install 'mpi-operator[sdk]'``), none of the operator's runtime::

    from mpi_operator.sdk import MPIJobClient

    client = MPIJobClient()                      # kubeconfig, or in cluster
    job = client.create_from_yaml("examples/v2beta1/pi/pi.yaml")
    job = client.wait(job.name, "Succeeded", timeout=600, progress=True)
    for line in client.logs(job.name, follow=True):
        print(line)
    client.delete(job.name)

:class:`MPIJobClient` serves ``kubeflow.org/v2beta1`` MPIJobs, :class:`T9kMPIJobClient`
``batch.tensorstack.dev/v1beta1`` ones; :mod:`mpi_operator.sdk.aio` has both for asyncio.
"""

from mpi_operator.api import t9k, v2beta1

from .client import JobClient, MPIJobClient, T9kMPIJobClient
from .errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    FieldCause,
    ForbiddenError,
    InvalidError,
    JobFailedError,
    LogsUnavailableError,
    NotFoundError,
    SDKError,
    WaitTimeoutError,
)
from .kinds import state

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "FieldCause",
    "ForbiddenError",
    "InvalidError",
    "JobClient",
    "JobFailedError",
    "LogsUnavailableError",
    "MPIJobClient",
    "NotFoundError",
    "SDKError",
    "T9kMPIJobClient",
    "WaitTimeoutError",
    "state",
    "t9k",
    "v2beta1",
]
