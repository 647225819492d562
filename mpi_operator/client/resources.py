"""Names of API resources: group, version, plural, kind, scope.

A :class:`Resource` is all the REST client needs to build paths, so core
objects, batch Jobs and custom resources (kubeflow.org/v2beta1 mpijobs) are
handled by the same code with no generated models.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group or 'core'}"


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Resource("", "v1", "events", "Event")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
JOBS = Resource("batch", "v1", "jobs", "Job")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
POD_GROUPS_VOLCANO = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
POD_GROUPS_SCHEDULER_PLUGINS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
POD_GROUPS_WORKLOAD_API = Resource("scheduling.k8s.io", "v1alpha2", "podgroups", "PodGroup")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")
