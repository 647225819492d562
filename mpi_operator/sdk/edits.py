"""The calls of a client beyond create, get, wait and delete: change a job (a merge patch,
or the whole job replaced), list its pods, read every worker's log at once. Mixed into
:class:`~mpi_operator.sdk.client.JobClient`."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Generic

from . import logs as _logs
from .errors import InvalidArgumentError
from .kinds import JobKind, JobT

STRICT = "Strict"
"""The ``fieldValidation`` of every write: the API server refuses an unknown field
(a typo in a pod template) rather than dropping it."""

_ROLES = ("launcher", "worker")


class JobEdits(Generic[JobT]):
    """``patch``, ``update``, ``pods`` and ``all_worker_logs`` of a client."""

    kind: JobKind[JobT]
    namespace: str
    _custom: Any
    _core: Any

    if TYPE_CHECKING:  # what JobClient gives

        def timeout(self, request_timeout: float | None = None) -> float: ...
        def _translated(self) -> AbstractContextManager[None]: ...
        def _parse(self, obj: Any) -> JobT: ...
        def _body(self, job: JobT | Mapping[str, Any]) -> dict[str, Any]: ...

    def patch(
        self,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        *,
        request_timeout: float | None = None,
    ) -> JobT:
        """Changes the job with a JSON merge patch in its wire form (camelCase;
        ``None`` removes a field), e.g. ``{"spec": {"runPolicy": {"backoffLimit": 3}}}``;
        returns the job as patched. An unknown field is refused by the API server's
        strict field validation (:class:`InvalidSpecError` naming it), a value it does
        not take as :class:`InvalidError`."""
        kind = self.kind
        with self._translated():
            obj = self._custom.patch_namespaced_custom_object(
                kind.group,
                kind.version,
                namespace or self.namespace,
                kind.plural,
                name,
                dict(patch),
                field_validation=STRICT,
                _content_type="application/merge-patch+json",
                _request_timeout=self.timeout(request_timeout),
            )
        return self._parse(obj)

    def update(
        self,
        job: JobT | Mapping[str, Any],
        namespace: str | None = None,
        *,
        request_timeout: float | None = None,
    ) -> JobT:
        """Replaces the job with ``job`` (a model or its dict, as :meth:`create` takes
        it, e.g. one from :meth:`get` changed); returns it as stored. Its
        ``metadata.resourceVersion``, when set, must still be the stored one, else
        :class:`ConflictError` (read it again and retry)."""
        body = self._body(job)
        name = str(body["metadata"].get("name") or "")
        if not name:
            raise InvalidArgumentError(f"{self.kind.kind} to update has no metadata.name")
        ns = namespace or body["metadata"].get("namespace") or self.namespace
        body["metadata"]["namespace"] = ns
        kind = self.kind
        with self._translated():
            obj = self._custom.replace_namespaced_custom_object(
                kind.group,
                kind.version,
                ns,
                kind.plural,
                name,
                body,
                field_validation=STRICT,
                _request_timeout=self.timeout(request_timeout),
            )
        return self._parse(obj)

    def pods(
        self,
        name: str,
        namespace: str | None = None,
        *,
        role: str | None = None,
        request_timeout: float | None = None,
    ) -> list[Any]:
        """The job's pods (``kubernetes.client.V1Pod``), launcher first then workers by
        index; ``role="launcher"`` or ``"worker"`` for one kind of them."""
        if role not in (None, *_ROLES):
            raise InvalidArgumentError(f"no pod role {role!r}; one of {', '.join(_ROLES)}")
        kind = self.kind
        selector = {
            None: kind.pod_selector,
            "launcher": kind.launcher_selector,
            "worker": kind.worker_selector,
        }[role](name)
        with self._translated():
            found = self._core.list_namespaced_pod(
                namespace or self.namespace,
                label_selector=selector,
                _request_timeout=self.timeout(request_timeout),
            ).items
        return sorted(
            found, key=lambda p: ("-worker-" in str(p.metadata.name), _logs.worker_order(p))
        )

    def all_worker_logs(
        self,
        name: str,
        namespace: str | None = None,
        *,
        container: str | None = None,
        request_timeout: float | None = None,
    ) -> dict[str, str]:
        """Every started worker pod's current log in one call: pod name -> its text, in
        worker index order (a worker that has not started has no entry)."""
        return _logs.all_worker_logs(
            self,  # type: ignore[arg-type]
            name,
            namespace or self.namespace,
            container,
            self.timeout(request_timeout),
        )
