"""Synchronous clients of the two MPIJob kinds: create, get, list, wait, suspend, resume,
patch, update, pods, logs (the launcher's and the workers'), delete.

:class:`MPIJobClient` serves ``kubeflow.org/v2beta1`` MPIJobs and
:class:`T9kMPIJobClient` ``batch.tensorstack.dev/v1beta1`` ones; both return the pydantic
models of :mod:`mpi_operator.api`, so ``job.status`` is typed. They use the ``kubernetes``
package's synchronous client; every error answer of the API server is raised as one of
the typed errors of :mod:`mpi_operator.sdk.errors`, and so is a job refused before
any request (:class:`InvalidSpecError`) or an API server that cannot be reached
(:class:`SDKConnectionError`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client as k8s

from mpi_operator.api import t9k, v2beta1
from mpi_operator.api.object_model import ApiObject, metadata_of

from . import logs as _logs
from . import waiting
from ._config import DEFAULT_REQUEST_TIMEOUT, connect
from ._errors import translated
from .edits import STRICT, JobEdits
from .errors import InvalidSpecError, NotFoundError, WaitTimeoutError
from .kinds import KUBEFLOW, T9K, JobKind, JobT

Progress = bool | Callable[[Any], None]


class JobClient(JobEdits[JobT]):
    """The operations on one MPIJob kind; use :class:`MPIJobClient` or
    :class:`T9kMPIJobClient`."""

    kind: JobKind[JobT]

    def __init__(
        self,
        namespace: str | None = None,
        *,
        kubeconfig: str | Path | None = None,
        context: str | None = None,
        api_client: Any = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        """Connects with ``api_client`` (a ``kubernetes.client.ApiClient``) if given, else
        with the kubeconfig (``kubeconfig``, else ``$KUBECONFIG`` as it is now, else
        ``~/.kube/config``; its ``context`` or the current one), else in cluster.
        ``namespace`` defaults to the context's namespace (in cluster: the pod's), else
        ``default``. ``request_timeout`` bounds each request, in seconds (each call
        takes its own too): a server that does not answer in time raises
        :class:`SDKTimeoutError`."""
        default_namespace = "default"
        if api_client is None:
            api_client, default_namespace = connect(kubeconfig, context)
        self.api_client = api_client
        self.namespace: str = namespace or default_namespace
        self.request_timeout = float(request_timeout)
        self._custom = k8s.CustomObjectsApi(api_client)
        self._core = k8s.CoreV1Api(api_client)

    # -- create ------------------------------------------------------------------------

    def create(
        self,
        job: JobT | Mapping[str, Any],
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        request_timeout: float | None = None,
    ) -> JobT:
        """Creates the job (a model, or its wire form as a dict) in ``namespace``, else the
        job's own ``metadata.namespace``, else the client's; returns it as created.
        A dict with an unknown field or a value outside an enumeration is refused
        before any request (:class:`InvalidSpecError`); an unknown field where the
        models do not look (a pod template) is refused by the API server's strict field
        validation, also as :class:`InvalidSpecError` naming each field."""
        body = self._body(job)
        ns = namespace or body["metadata"].get("namespace") or self.namespace
        body["metadata"]["namespace"] = ns
        kind = self.kind
        with self._translated():
            created = self._custom.create_namespaced_custom_object(
                kind.group,
                kind.version,
                ns,
                kind.plural,
                body,
                dry_run="All" if dry_run else None,
                field_validation=STRICT,
                _request_timeout=self.timeout(request_timeout),
            )
        return self._parse(created)

    def create_from_yaml(
        self,
        path: str | Path,
        *,
        namespace: str | None = None,
        dry_run: bool = False,
        request_timeout: float | None = None,
    ) -> JobT:
        """Creates the one job of this kind that the YAML file holds."""
        try:
            docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
        except (OSError, yaml.YAMLError) as e:
            raise InvalidSpecError(f"{path}: {e}") from e
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise InvalidSpecError(
                f"{path}: expected one {self.kind.kind} document, got {len(docs)}"
            )
        return self.create(
            docs[0], namespace=namespace, dry_run=dry_run, request_timeout=request_timeout
        )

    def _body(self, job: JobT | Mapping[str, Any]) -> dict[str, Any]:
        kind = self.kind
        if isinstance(job, ApiObject):
            if not isinstance(job, kind.model):
                raise InvalidSpecError(
                    f"{self.__class__.__name__} creates {kind.api_version} {kind.kind}, "
                    f"not a {type(job).__module__}.{type(job).__name__}"
                )
            body = job.to_dict()
        else:
            body = dict(job)
        given = (body.get("apiVersion"), body.get("kind"))
        if given[0] not in (None, kind.api_version) or given[1] not in (None, kind.kind):
            raise InvalidSpecError(
                f"{self.__class__.__name__} creates {kind.api_version} {kind.kind}, "
                f"not {given[0]} {given[1]}"
            )
        body["apiVersion"], body["kind"] = kind.api_version, kind.kind
        body["metadata"] = dict(metadata_of(body))
        if not isinstance(job, ApiObject):
            _check_spec(kind.model, body)
        return body

    def timeout(self, request_timeout: float | None = None) -> float:
        """The request timeout of a call: its own, else the client's."""
        return self.request_timeout if request_timeout is None else float(request_timeout)

    def _translated(self) -> AbstractContextManager[None]:
        return translated(str(getattr(self.api_client.configuration, "host", "") or ""))

    def _parse(self, obj: Any) -> JobT:
        return self.kind.model.from_dict(obj)

    # -- read --------------------------------------------------------------------------

    def get(
        self, name: str, namespace: str | None = None, *, request_timeout: float | None = None
    ) -> JobT:
        """The job as stored; :class:`NotFoundError` if there is none."""
        kind = self.kind
        with self._translated():
            obj = self._custom.get_namespaced_custom_object(
                kind.group,
                kind.version,
                namespace or self.namespace,
                kind.plural,
                name,
                _request_timeout=self.timeout(request_timeout),
            )
        return self._parse(obj)

    def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str | None = None,
        request_timeout: float | None = None,
    ) -> list[JobT]:
        """The jobs of ``namespace`` (else the client's), or of every namespace."""
        kind = self.kind
        with self._translated():
            if all_namespaces:
                result = self._custom.list_cluster_custom_object(
                    kind.group,
                    kind.version,
                    kind.plural,
                    label_selector=label_selector,
                    _request_timeout=self.timeout(request_timeout),
                )
            else:
                result = self._custom.list_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    namespace or self.namespace,
                    kind.plural,
                    label_selector=label_selector,
                    _request_timeout=self.timeout(request_timeout),
                )
        items: list[Any] = cast(dict[str, Any], result).get("items") or []
        return [self._parse(item) for item in items]

    # -- wait --------------------------------------------------------------------------

    def wait(
        self,
        name: str,
        condition: str = "Succeeded",
        *,
        namespace: str | None = None,
        timeout: float = 600,
        progress: Progress = False,
    ) -> JobT:
        """Waits until the job reaches ``condition`` (Kubeflow: a condition type that is
        true, e.g. ``Running``, ``Succeeded``, ``Failed``; T9k: a phase or a true
        condition) and returns it. Raises :class:`JobFailedError` if it fails meanwhile,
        :class:`WaitTimeoutError` after ``timeout`` seconds, :class:`NotFoundError` if it
        is (or gets) deleted. ``progress=True`` prints a line on each change of its
        status (plain text, fine in a notebook); a callable gets each job version."""
        return waiting.wait(self, name, condition, namespace or self.namespace, timeout, progress)

    # -- suspend and resume ------------------------------------------------------------

    def suspend(
        self, name: str, namespace: str | None = None, *, request_timeout: float | None = None
    ) -> JobT:
        """Suspends the job: its pods are deleted, and none are created until it is
        resumed (Kubeflow: ``spec.runPolicy.suspend``; T9k: ``spec.runMode.pause``).
        Returns the job as patched."""
        return self.patch(
            name, self.kind.suspend_patch(True), namespace, request_timeout=request_timeout
        )

    def resume(
        self, name: str, namespace: str | None = None, *, request_timeout: float | None = None
    ) -> JobT:
        """Resumes a suspended job: its pods are created again. Returns it as patched."""
        return self.patch(
            name, self.kind.suspend_patch(False), namespace, request_timeout=request_timeout
        )

    # -- logs --------------------------------------------------------------------------

    def logs(
        self,
        name: str,
        namespace: str | None = None,
        *,
        follow: bool = False,
        container: str | None = None,
        timeout: float = 300,
        request_timeout: float | None = None,
    ) -> Iterator[str]:
        """The lines of the launcher's log (its newest pod). With ``follow``, waits up to
        ``timeout`` seconds for the launcher to start, then yields lines as they are
        written, attempt after attempt (a restarted container, a new launcher pod), until
        an attempt succeeds or the job finishes; without, the current attempt's log, or
        :class:`LogsUnavailableError` when the launcher has not started."""
        return _logs.launcher_logs(
            self,
            name,
            namespace or self.namespace,
            follow,
            container,
            timeout,
            self.timeout(request_timeout),
        )

    def worker_logs(
        self,
        name: str,
        index: int = 0,
        namespace: str | None = None,
        *,
        follow: bool = False,
        container: str | None = None,
        timeout: float = 300,
        request_timeout: float | None = None,
    ) -> Iterator[str]:
        """The lines of worker ``index``'s log (pod ``<name>-worker-<index>``). With
        ``follow``, waits up to ``timeout`` seconds for the pod to start, then yields
        lines as they are written until its container stops; without, its current log,
        or :class:`LogsUnavailableError` when it has not started."""
        return _logs.worker_logs(
            self,
            name,
            namespace or self.namespace,
            index,
            follow,
            container,
            timeout,
            self.timeout(request_timeout),
        )

    # -- delete ------------------------------------------------------------------------

    def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        wait: bool = False,
        timeout: float = 120,
        missing_ok: bool = False,
        request_timeout: float | None = None,
    ) -> None:
        """Deletes the job (its children follow, by the garbage collector). With ``wait``,
        returns once it is gone. ``missing_ok``: no error if it does not exist."""
        kind, ns = self.kind, namespace or self.namespace
        try:
            with self._translated():
                self._custom.delete_namespaced_custom_object(
                    kind.group,
                    kind.version,
                    ns,
                    kind.plural,
                    name,
                    _request_timeout=self.timeout(request_timeout),
                )
        except NotFoundError:
            if not missing_ok:
                raise
            return
        deadline = time.monotonic() + timeout
        while wait:
            try:
                job = self.get(name, ns, request_timeout=request_timeout)
            except NotFoundError:
                return
            if time.monotonic() > deadline:
                raise WaitTimeoutError(f"{kind.kind} {ns}/{name} still exists", job)
            time.sleep(0.5)

    # -- for the helpers ---------------------------------------------------------------

    @property
    def custom_objects(self) -> Any:
        """The ``kubernetes.client.CustomObjectsApi`` this client uses."""
        return self._custom

    @property
    def core(self) -> Any:
        """The ``kubernetes.client.CoreV1Api`` this client uses."""
        return self._core


def _check_spec(model: type[ApiObject], body: dict[str, Any]) -> None:
    """Refuses, as :class:`InvalidSpecError`, a body with an unknown field or a value
    outside an enumeration (metadata and pod templates are the API server's to check,
    with strict field validation)."""
    model.from_dict(body, strict=True)


class MPIJobClient(JobClient[v2beta1.MPIJob]):
    """Kubeflow MPIJobs (``kubeflow.org/v2beta1``)."""

    kind = KUBEFLOW


class T9kMPIJobClient(JobClient[t9k.MPIJob]):
    """TensorStack T9k MPIJobs (``batch.tensorstack.dev/v1beta1``)."""

    kind = T9K
