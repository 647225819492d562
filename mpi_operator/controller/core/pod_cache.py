"""What the controllers keep of a pod in their caches: only what they read.

A worker pod as the API returns it is mostly spec (containers, env, volumes, mounts)
and container-status detail (images, IDs, timestamps) that no controller decision
uses. At thousands of cached pods that is most of the operator's memory, so the pod
informers store the result of :func:`slim_pod`, as client-go's TransformFunc allows.

Kept: the whole metadata (minus managedFields): names, labels, annotations, owner
references, deletion and creation timestamps, which adoption, expectations and
indexing read. ``spec.nodeName``. From the status: phase, reason, message, start
time, the conditions, and each container's name, state, last state, readiness and
restart count, which the status, the failure policy and the culprit read.

Pods are never written back from the cache (workers are created from the builders and
deleted by name), so nothing dropped here can be lost on a write. Jobs are not slimmed:
the launcher Job is updated with a PUT of the cached object.
"""

from __future__ import annotations

from typing import Any

from mpi_operator.api.object_model import Obj, metadata_of

_STATUS_KEYS = ("phase", "reason", "message", "startTime", "conditions")
_CONTAINER_KEYS = ("name", "state", "lastState", "ready", "restartCount")
_CONDITION_KEYS = ("type", "status", "reason", "message", "lastTransitionTime")


def _containers(statuses: Any) -> list[Obj]:
    return [
        {k: cs[k] for k in _CONTAINER_KEYS if k in cs}
        for cs in statuses or ()
        if isinstance(cs, dict)
    ]


def slim_pod(pod: Obj) -> Obj:
    """The cached form of ``pod`` (a new dict; the input is not modified)."""
    meta = dict(metadata_of(pod))
    meta.pop("managedFields", None)
    out: Obj = {"metadata": meta}
    spec = pod.get("spec") or {}
    out["spec"] = {"nodeName": spec["nodeName"]} if "nodeName" in spec else {}
    status = pod.get("status") or {}
    slim: Obj = {k: status[k] for k in _STATUS_KEYS if k in status}
    if "conditions" in slim:
        slim["conditions"] = [
            {k: c[k] for k in _CONDITION_KEYS if k in c}
            for c in slim["conditions"] or ()
            if isinstance(c, dict)
        ]
    for key in ("initContainerStatuses", "containerStatuses"):
        if key in status:
            slim[key] = _containers(status[key])
    out["status"] = slim
    return out
