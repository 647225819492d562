"""A typed Python client of MPIJobs, for notebooks, pipelines and scripts.

It needs only pydantic, PyYAML and the ``kubernetes`` package, none of the operator's
runtime. Until a package index serves it, install it from a checkout of this
repository: ``pip install ./sdk``, or build the wheel with ``pip wheel --no-deps -w dist
./sdk`` and install ``dist/mpi_operator_sdk-*.whl`` where you need it. It ships
``py.typed``, so mypy checks the code that uses it::

    from mpi_operator.sdk import MPIJobClient

    client = MPIJobClient()                      # kubeconfig, or in cluster
    job = client.create_from_yaml("examples/v2beta1/pi/pi.yaml")
    job = client.wait(job.name, "Succeeded", timeout=600, progress=True)
    for line in client.logs(job.name, follow=True):
        print(line)
    client.delete(job.name)

:class:`MPIJobClient` serves ``kubeflow.org/v2beta1`` MPIJobs, :class:`T9kMPIJobClient`
``batch.tensorstack.dev/v1beta1`` ones; :mod:`mpi_operator.sdk.aio` has both for asyncio.

The SDK refuses mistakes before they reach the API server: a model built with an
unknown field, a value outside an enumeration or an unknown replica type, and
:meth:`~JobClient.create` of such a dict or YAML file, raise :class:`InvalidSpecError`
naming each field.
Every error the clients raise is an :class:`SDKError` (see :mod:`mpi_operator.sdk.errors`).
"""

from mpi_operator.api import t9k, v2beta1

from .client import JobClient, MPIJobClient, T9kMPIJobClient
from .errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    FieldCause,
    ForbiddenError,
    InvalidArgumentError,
    InvalidError,
    InvalidSpecError,
    JobFailedError,
    LogsUnavailableError,
    NotFoundError,
    SDKConnectionError,
    SDKError,
    SDKTimeoutError,
    WaitTimeoutError,
)
from .kinds import state

__all__ = [
    "AlreadyExistsError",
    "ApiError",
    "ConflictError",
    "FieldCause",
    "ForbiddenError",
    "InvalidArgumentError",
    "InvalidError",
    "InvalidSpecError",
    "JobClient",
    "JobFailedError",
    "LogsUnavailableError",
    "MPIJobClient",
    "NotFoundError",
    "SDKConnectionError",
    "SDKError",
    "SDKTimeoutError",
    "T9kMPIJobClient",
    "WaitTimeoutError",
    "state",
    "t9k",
    "v2beta1",
]
