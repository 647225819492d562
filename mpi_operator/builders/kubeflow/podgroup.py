"""PodGroups for gang scheduling with volcano or the scheduler-plugins coscheduler.

Pure functions: the priority-class values that upstream reads from a lister
are passed in as a mapping of class name to value, and warnings upstream
would log are handed back as data for the caller to log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.object_model import Obj
from mpi_operator.api.quantity import Quantity, QuantityError
from mpi_operator.api.scheduling import (
    SCHEDULER_PLUGINS_API_VERSION,
    VOLCANO_API_VERSION,
    GangKind,
    GangScheduling,
)
from mpi_operator.api.v2beta1 import MPIJob, ReplicaSpec, ReplicaType
from mpi_operator.builders.kubeflow.common import controller_owner_reference
from mpi_operator.builders.meta import deep_copy, own_dict
from mpi_operator.builders.workload_api import join_pod_group, workload_pod_group

POD_GROUP_KIND = "PodGroup"
POD_GROUP_PLURAL = "podgroups"

VOLCANO_QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
SCHEDULER_PLUGINS_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


# -- spec computations ------------------------------------------------------------


def _replicas_of(spec: ReplicaSpec | None) -> int:
    return spec.replicas if spec is not None and spec.replicas is not None else 0


def _pod_spec(spec: ReplicaSpec | None) -> Obj:
    if spec is None:
        return {}
    pod_spec = spec.template.get("spec")
    return pod_spec if isinstance(pod_spec, dict) else {}


def calculate_min_available(job: MPIJob) -> int:
    """schedulingPolicy.minAvailable when set, else the worker count plus one."""
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.min_available is not None:
        return policy.min_available
    return _replicas_of(job.replica_spec(ReplicaType.WORKER)) + 1


def calculate_priority_class_name(job: MPIJob) -> str:
    """schedulingPolicy.priorityClass, else the launcher's, else the worker's."""
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.priority_class:
        return policy.priority_class
    for replica_type in (ReplicaType.LAUNCHER, ReplicaType.WORKER):
        name = _pod_spec(job.replica_spec(replica_type)).get("priorityClassName")
        if name:
            return str(name)
    return ""


def _canonical_resource_list(resources: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(Quantity.from_json(resources[name])) for name in sorted(resources)}


def _add_resources(total: dict[str, Quantity], resources: Any, replicas: int) -> None:
    if not isinstance(resources, dict):
        return
    merged: dict[str, Any] = dict(resources.get("requests") or {})
    for name, value in (resources.get("limits") or {}).items():
        merged.setdefault(name, value)
    for name, value in merged.items():
        amount = Quantity.from_json(value).mul(replicas)
        current = total.get(name)
        total[name] = amount if current is None else current.add(amount)


@dataclass
class _Ranked:
    replica_type: str
    priority: int
    replicas: int | None
    spec: ReplicaSpec


def _ordered_replica_types(job: MPIJob) -> list[str]:
    specs = job.spec.mpi_replica_specs or {}
    known = [t.value for t in (ReplicaType.LAUNCHER, ReplicaType.WORKER) if t.value in specs]
    return known + sorted(k for k in specs if k not in known)


def compute_min_resources(
    job: MPIJob, min_member: int | None, priority_classes: Mapping[str, int]
) -> dict[str, str] | None:
    """Sums the resources of the first ``min_member`` pods, highest priority first.

    Per container, requests are used, falling back to limits for resources
    without a request. When launcher and workers have the same priority the
    workers are the ones left out. Priority classes missing from
    ``priority_classes`` count as priority 0, as upstream does when the class
    does not exist. Returns None when there is nothing to compute.
    """
    specs = job.spec.mpi_replica_specs or {}
    order: list[_Ranked] = []
    for replica_type in _ordered_replica_types(job):
        spec = specs[replica_type]
        if spec is None:
            continue
        class_name = _pod_spec(spec).get("priorityClassName")
        priority = priority_classes.get(class_name, 0) if class_name else 0
        order.append(_Ranked(replica_type, priority, spec.replicas, spec))
    if not order:
        return None
    # Stable: with equal priorities the launcher stays ahead of the workers.
    order.sort(key=lambda r: -r.priority)

    total_replicas = sum(r.replicas or 0 for r in order[:2])
    if min_member is not None and total_replicas > min_member:
        same_priority = len(order) < 2 or order[0].priority == order[1].priority
        if same_priority:
            workers = [r for r in order if r.replica_type == ReplicaType.WORKER.value]
            if not workers:
                return None
            workers[0].replicas = min_member - 1
        else:
            order[1].replicas = min_member - 1

    totals: dict[str, Quantity] = {}
    for ranked in order:
        if ranked.replicas is None:
            continue
        for container in _pod_spec(ranked.spec).get("containers") or []:
            if isinstance(container, dict):
                _add_resources(totals, container.get("resources"), ranked.replicas)
    return {name: str(totals[name]) for name in sorted(totals)}


def calculate_min_resources(
    job: MPIJob, min_member: int | None, priority_classes: Mapping[str, int]
) -> dict[str, str] | None:
    """minResources of the PodGroup (the same rule for both PodGroup kinds).

    schedulingPolicy.minResources when given (even if empty), else None for a
    ``min_member`` of 0, else :func:`compute_min_resources`. Quantities come
    back as the strings Go would serialize.
    """
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.min_resources is not None:
        return _canonical_resource_list(policy.min_resources)
    if min_member is not None and min_member == 0:
        return None
    return compute_min_resources(job, min_member, priority_classes)


# -- PodGroup objects -------------------------------------------------------------


def _metadata(job: MPIJob) -> Obj:
    meta: Obj = {"name": job.name}
    if job.namespace:
        meta["namespace"] = job.namespace
    meta["ownerReferences"] = [controller_owner_reference(job)]
    return meta


def new_volcano_pod_group(job: MPIJob, priority_classes: Mapping[str, int]) -> Obj:
    """The ``scheduling.volcano.sh/v1beta1`` PodGroup of a job.

    schedulingPolicy.scheduleTimeoutSeconds has no volcano counterpart and is
    not used.
    """
    min_member = calculate_min_available(job)
    annotations = job.metadata.get("annotations") or {}
    queue = str(annotations.get(VOLCANO_QUEUE_NAME_ANNOTATION) or "")
    policy = job.spec.run_policy.scheduling_policy
    if policy is not None and policy.queue:
        queue = policy.queue
    spec: Obj = {}
    if min_member:
        spec["minMember"] = min_member
    if queue:
        spec["queue"] = queue
    priority_class_name = calculate_priority_class_name(job)
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    min_resources = calculate_min_resources(job, min_member, priority_classes)
    if min_resources is not None:
        spec["minResources"] = min_resources
    return {
        "apiVersion": VOLCANO_API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": _metadata(job),
        "spec": spec,
    }


def new_scheduler_plugins_pod_group(job: MPIJob, priority_classes: Mapping[str, int]) -> Obj:
    """The ``scheduling.x-k8s.io/v1alpha1`` PodGroup of a job.

    schedulingPolicy.queue and priorityClass have no counterpart there.
    """
    policy = job.spec.run_policy.scheduling_policy
    timeout = 0
    if policy is not None and policy.schedule_timeout_seconds is not None:
        timeout = policy.schedule_timeout_seconds
    min_member = calculate_min_available(job)
    spec: Obj = {}
    if min_member:
        spec["minMember"] = min_member
    min_resources = calculate_min_resources(job, min_member, priority_classes)
    if min_resources:
        spec["minResources"] = min_resources
    spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": SCHEDULER_PLUGINS_API_VERSION,
        "kind": POD_GROUP_KIND,
        "metadata": _metadata(job),
        "spec": spec,
    }


def new_workload_api_pod_group(job: MPIJob) -> Obj:
    """The ``scheduling.k8s.io/v1alpha2`` PodGroup of a job (ours): a gang of
    ``minCount`` pods, counted as for the other PodGroups. The API has no queue,
    priority, resources or timeout: the pods' own priority class applies."""
    return workload_pod_group(_metadata(job), calculate_min_available(job))


def new_pod_group(job: MPIJob, gang: GangScheduling, priority_classes: Mapping[str, int]) -> Obj:
    if gang.kind is GangKind.VOLCANO:
        return new_volcano_pod_group(job, priority_classes)
    if gang.kind is GangKind.WORKLOAD_API:
        return new_workload_api_pod_group(job)
    return new_scheduler_plugins_pod_group(job, priority_classes)


def updated_pod_group(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> Obj:
    """The existing PodGroup with its spec replaced by the desired one."""
    result: Obj = deep_copy(dict(existing))
    result["spec"] = deep_copy(desired.get("spec") or {})
    return result


# -- pod templates ----------------------------------------------------------------


def decorate_pod_template(template: Mapping[str, Any], job_name: str, gang: GangScheduling) -> Obj:
    """A copy of ``template`` set up for gang scheduling in the job's PodGroup; it shares
    with ``template`` everything but the objects on the way to the fields it sets."""
    result: Obj = dict(template)
    if gang.kind is GangKind.WORKLOAD_API:
        join_pod_group(own_dict(result, "spec"), job_name)
        return result
    own_dict(result, "spec")["schedulerName"] = gang.scheduler_name
    metadata = own_dict(result, "metadata")
    if gang.kind is GangKind.VOLCANO:
        key, field, value = VOLCANO_GROUP_NAME_ANNOTATION, "annotations", job_name
    else:
        key, field, value = SCHEDULER_PLUGINS_POD_GROUP_LABEL, "labels", job_name
    own_dict(metadata, field)[key] = value
    return result


# -- spec comparison --------------------------------------------------------------


def _quantity_or_text(value: Any) -> Quantity | Any:
    try:
        return Quantity.from_json(value)
    except QuantityError:
        return value


def _resource_lists_equal(a: Any, b: Any) -> bool:
    """Semantic equality of ResourceLists: null and empty are equal, and
    quantities compare by value, not by spelling."""
    left: Mapping[str, Any] = a or {}
    right: Mapping[str, Any] = b or {}
    if left.keys() != right.keys():
        return False
    for name, value in left.items():
        x, y = _quantity_or_text(value), _quantity_or_text(right[name])
        if isinstance(x, Quantity) and isinstance(y, Quantity):
            if x.cmp(y) != 0:
                return False
        elif x != y:
            return False
    return True


def _json_equal(a: Any, b: Any) -> bool:
    """Structural equality where an absent key equals an explicit null."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k, v in a.items() if v is not None} | {
            k for k, v in b.items() if v is not None
        }
        return all(_json_equal(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _volcano_specs_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if (a.get("minMember") or 0) != (b.get("minMember") or 0):
        return False
    if (a.get("minTaskMember") or {}) != (b.get("minTaskMember") or {}):
        return False
    for field in ("queue", "priorityClassName"):
        if (a.get(field) or "") != (b.get(field) or ""):
            return False
    res_a, res_b = a.get("minResources"), b.get("minResources")
    if (res_a is None) != (res_b is None) or not _resource_lists_equal(res_a, res_b):
        return False
    topo_a, topo_b = a.get("networkTopology"), b.get("networkTopology")
    if (topo_a is None) != (topo_b is None) or not _json_equal(topo_a, topo_b):
        return False
    return _json_equal(a.get("subGroupPolicy") or [], b.get("subGroupPolicy") or [])


def _scheduler_plugins_specs_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if (a.get("minMember") or 0) != (b.get("minMember") or 0):
        return False
    if not _resource_lists_equal(a.get("minResources"), b.get("minResources")):
        return False
    return a.get("scheduleTimeoutSeconds") == b.get("scheduleTimeoutSeconds")


def pod_group_specs_equal(gang: GangScheduling, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two PodGroups of ``gang``'s kind have semantically equal specs.

    Compares the spec fields the Go types know (other fields are ignored, as
    Go drops them when decoding), with Go's semantic rules: unset equals the
    zero value for plain fields, null equals empty for maps and lists, unset
    differs from set for pointer fields, and quantities compare by value.
    """
    spec_a: Mapping[str, Any] = a.get("spec") or {}
    spec_b: Mapping[str, Any] = b.get("spec") or {}
    if gang.kind is GangKind.VOLCANO:
        return _volcano_specs_equal(spec_a, spec_b)
    if gang.kind is GangKind.WORKLOAD_API:
        # Set at creation and never updated: the operator's role has no update on them.
        return True
    return _scheduler_plugins_specs_equal(spec_a, spec_b)
