"""Start-up checks that turn common misconfigurations into one clear error.

Before campaigning for leadership the process makes sure that the API server
answers, that the MPIJob CRD is served, that it may list and watch everything
the controller caches (in the namespace it watches, or cluster-wide), that it
may use Leases, and that the lock namespace exists. Each failure raises
:class:`PreflightError` with a one-line message naming what is wrong.

Listing is probed for real (``limit=1``); watching is asked of the API server
with a SelfSubjectAccessReview. The gang scheduler's PodGroup API (``--gang-scheduling``)
not being served does not stop the process: it is logged as a warning, and only the
jobs that need a PodGroup fail, each with a ``SyncFailed`` event naming the API (T9k
jobs, and every job of another controller, are served meanwhile). A probe that cannot
be made because of our own missing rights (reading Namespaces is not in the operator's
ClusterRole) is skipped rather than failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client.errors import NETWORK_ERRORS, ApiError
from mpi_operator.client.informer import namespace_scopes
from mpi_operator.client.kubeapi import KubeClient
from mpi_operator.client.resources import (
    CONFIGMAPS,
    JOBS,
    LEASES,
    MPIJOBS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    SECRETS,
    SERVICES,
    Resource,
)
from mpi_operator.controller.core.crds import GANG_SCHEDULING_FLAG, not_served
from mpi_operator.controller.core.parallel import run_all
from mpi_operator.controller.kubeflow.children import pod_group_resource

log = structlog.get_logger(__name__)

LOCK_NAME = "mpi-operator"
PROBE_TIMEOUT = 15.0
SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class PreflightError(Exception):
    """A start-up check failed; the message is meant for the operator's user."""


@dataclass(frozen=True, slots=True)
class Preflight:
    client: KubeClient
    namespace: str | tuple[str, ...] | None
    """The watched namespace (or namespaces); None: all of them."""
    lock_namespace: str
    gang: GangScheduling | None = None
    review_client: KubeClient | None = None
    """Asks the access reviews (another client spreads the probes over two rate limits)."""

    def scopes(self, resource: Resource) -> tuple[str | None, ...]:
        """Where ``resource`` is listed: each watched namespace, or the cluster (None)."""
        return namespace_scopes(self.namespace) if resource.namespaced else (None,)

    @staticmethod
    def where(resource: Resource, namespace: str | None) -> str:
        if not resource.namespaced:
            return "the cluster"
        return f"namespace {namespace!r}" if namespace else "all namespaces"

    def watched_resources(self) -> list[Resource]:
        resources = [MPIJOBS, PODS, JOBS, SERVICES, CONFIGMAPS, SECRETS]
        if self.gang is not None:
            resources += [pod_group_resource(self.gang), PRIORITY_CLASSES]
        return resources

    def is_gang_api(self, resource: Resource) -> bool:
        """Whether ``resource`` is the gang scheduler's PodGroup, which only the jobs that
        need one need."""
        return self.gang is not None and resource == pod_group_resource(self.gang)

    async def run(self) -> None:
        await self.check_crd()
        checks = [(r, ns) for r in self.watched_resources() for ns in self.scopes(r)]
        # Every check ends before the first failure is raised: none is left in flight
        # when the process closes its clients (a TLS read cut short logs an error).
        await run_all(*(self.check_list(r, ns) for r, ns in checks))
        await run_all(*(self.check_watch(r, ns) for r, ns in checks))
        await self.check_lock_namespace()
        await self.check_leases()

    async def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        client: KubeClient | None = None,
        discard_body: bool = False,
    ) -> Any:
        try:
            return await (client or self.client).request(
                method,
                path,
                query=query,
                body=body,
                request_timeout=PROBE_TIMEOUT,
                discard_body=discard_body,
            )
        except NETWORK_ERRORS as err:
            host = self.client.configuration.host
            detail = str(err) or type(err).__name__
            raise PreflightError(
                f"cannot reach the Kubernetes API server at {host}: {detail}"
            ) from err
        except ApiError as err:
            if err.status == 401:
                raise PreflightError(
                    "the Kubernetes API server rejected our credentials (401 Unauthorized)"
                ) from err
            raise

    async def check_crd(self) -> None:
        path = f"/apis/{MPIJOBS.group}/{MPIJOBS.version}"
        try:
            found = await self._request("GET", path)
        except ApiError as err:
            if err.status != 404:
                raise PreflightError(f"GET {path} failed: {err}") from err
            found = None
        plurals = {r.get("name") for r in (found or {}).get("resources", [])}
        if MPIJOBS.plural not in plurals:
            raise PreflightError(
                f"the MPIJob CRD (mpijobs.{MPIJOBS.group}, version {MPIJOBS.version}) is not "
                "installed: install it before starting the operator"
            )

    async def check_list(self, resource: Resource, namespace: str | None) -> None:
        path = resource.path(namespace)
        try:
            # The answer is not read: only whether we may list matters, and an object
            # the decoder refuses must not stop the operator here either.
            await self._request("GET", path, query=[("limit", "1")], discard_body=True)
        except ApiError as err:
            where = self.where(resource, namespace)
            if err.status == 403:
                raise PreflightError(
                    f"RBAC forbids listing {resource.plural}.{resource.group or 'core'} in "
                    f"{where}: {err.message}"
                ) from err
            if err.status == 404 and self.is_gang_api(resource):
                log.warning(
                    "gang scheduling's API is not served: the jobs that need it fail until it is",
                    reason=not_served(resource, GANG_SCHEDULING_FLAG),
                )
                return
            if err.status == 404 and resource.group and resource is not MPIJOBS:
                raise PreflightError(
                    f"{resource.kind}: {not_served(resource, 'the operator')} ({err.message})"
                ) from err
            raise PreflightError(f"listing {resource} in {where} failed: {err}") from err

    async def check_watch(self, resource: Resource, namespace: str | None) -> None:
        status = await self._access_review("watch", resource.group, resource.plural, namespace)
        if status is not None and not status.get("allowed"):
            where = self.where(resource, namespace)
            reason = status.get("reason") or "no RBAC rule allows it"
            raise PreflightError(
                f"RBAC forbids watching {resource.plural}.{resource.group or 'core'} in "
                f"{where}: {reason}"
            )

    async def _access_review(
        self, verb: str, group: str, plural: str, namespace: str | None = None, name: str = ""
    ) -> dict[str, Any] | None:
        """The status of a SelfSubjectAccessReview, or None when it cannot be asked."""
        attrs: dict[str, Any] = {"verb": verb, "group": group, "resource": plural}
        if namespace:
            attrs["namespace"] = namespace
        if name:
            attrs["name"] = name
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs},
        }
        try:
            answer = await self._request("POST", SSAR_PATH, body=review, client=self.review_client)
        except ApiError as err:
            log.debug("cannot ask for access", verb=verb, resource=plural, error=str(err))
            return None
        return dict((answer or {}).get("status") or {})

    async def check_lock_namespace(self) -> None:
        # Asked first, so that a role without namespace reads (as deploy/'s) leaves no
        # denial in the API server's audit log.
        review = await self._access_review("get", "", "namespaces", name=self.lock_namespace)
        if not (review or {}).get("allowed"):
            log.debug("lock namespace not checked: reading namespaces is not allowed")
            return
        try:
            await self._request("GET", NAMESPACES.path(None, self.lock_namespace))
        except ApiError as err:
            if err.status == 404:
                raise PreflightError(
                    f"the lock namespace {self.lock_namespace!r} does not exist: create it or "
                    "choose another with --lock-namespace"
                ) from err
            log.debug("lock namespace not checked", error=str(err))

    async def check_leases(self) -> None:
        try:
            await self._request("GET", LEASES.path(self.lock_namespace, LOCK_NAME))
        except ApiError as err:
            if err.status == 404:
                return
            if err.status == 403:
                raise PreflightError(
                    f"RBAC forbids reading leases.coordination.k8s.io in namespace "
                    f"{self.lock_namespace!r} (needed for leader election): {err.message}"
                ) from err
            raise PreflightError(f"reading the leader election Lease failed: {err}") from err
