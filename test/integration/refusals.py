"""Status writes the real API server refuses, on demand: a ValidatingAdmissionPolicy.

A policy and its binding, scoped to one test namespace, deny every UPDATE of a custom
resource's ``status`` subresource while the object carries :data:`REFUSE_LABEL`. The
label goes on and off with a patch of the main resource, which the policy does not
match, so a test makes a controller's status writes fail (403, as a webhook or a quota
would) exactly between two steps of its own, with no fake in the way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from devcluster.polling import eventually
from mpi_operator.client import KubeClient, Resource

REFUSE_LABEL = "test.mpi-operator.dev/refuse-status"
REFUSED_MESSAGE = "status writes are refused by the test"
_ADMISSION = "/apis/admissionregistration.k8s.io/v1"


def refusal_objects(name: str, resource: Resource, namespace: str) -> list[dict[str, Any]]:
    """The policy and its binding, refusing ``resource``'s status writes in ``namespace``
    while an object carries :data:`REFUSE_LABEL`."""
    return [_policy(name, resource), _binding(name, namespace)]


def _policy(name: str, resource: Resource) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [resource.group],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": [f"{resource.plural}/status"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": (
                        "!has(object.metadata.labels) || "
                        f"!('{REFUSE_LABEL}' in object.metadata.labels)"
                    ),
                    "message": REFUSED_MESSAGE,
                    "reason": "Forbidden",
                }
            ],
        },
    }


def _binding(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }


async def _set_label(kube: KubeClient, resource: Resource, ns: str, name: str, on: bool) -> None:
    patch = {"metadata": {"labels": {REFUSE_LABEL: "true" if on else None}}}
    await kube.patch(resource, ns, name, patch)


class StatusRefusal:
    """Turns the refusal of one object's status writes on and off."""

    def __init__(self, kube: KubeClient, resource: Resource, namespace: str) -> None:
        self.kube, self.resource, self.ns = kube, resource, namespace

    async def refuse(self, name: str) -> None:
        await _set_label(self.kube, self.resource, self.ns, name, True)

    async def allow(self, name: str) -> None:
        await _set_label(self.kube, self.resource, self.ns, name, False)


@contextlib.asynccontextmanager
async def status_refusal(
    api_cluster: Any, kube: KubeClient, resource: Resource, namespace: str, probe: dict[str, Any]
) -> AsyncIterator[StatusRefusal]:
    """Installs the policy for ``namespace`` and waits until the API server enforces it
    (``probe``, an object of ``resource`` nobody else writes, is refused a status
    write); the policy goes on exit, whatever happened."""
    name = f"refuse-status-{namespace}"
    for obj in refusal_objects(name, resource, namespace):
        await asyncio.to_thread(api_cluster.apply, obj)
    refusal = StatusRefusal(kube, resource, namespace)
    try:
        probe = {**probe, "metadata": {**probe["metadata"], "labels": {REFUSE_LABEL: "true"}}}
        created = await kube.create(resource, namespace, probe)
        probe_name = created["metadata"]["name"]

        async def enforced() -> bool:
            current = await kube.get(resource, namespace, probe_name)
            current["status"] = {"restartCount": 0}
            try:
                await kube.replace_status(resource, namespace, probe_name, current)
            except Exception as err:  # the refusal: 403 from the policy
                return getattr(err, "status", None) == 403
            return False

        await eventually(enforced, within=30, what="the status refusal policy in force")
        await kube.delete(resource, namespace, probe_name)
        yield refusal
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            await asyncio.to_thread(api_cluster.request, "DELETE", f"{_ADMISSION}/{kind}/{name}")
