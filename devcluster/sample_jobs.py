"""Small MPIJobs whose pods behave on the local cluster's fake nodes (KWOK annotations),
and MPIJobs steered to the ``real`` shape's node."""

from __future__ import annotations

import copy
from typing import Any

from . import COMPLETE_AFTER, EXIT_CODE, START_DELAY
from .nodeconfig import REAL_NODE_LABEL, REAL_NODE_TAINT

Obj = dict[str, Any]


def pi_mpijob(
    name: str,
    *,
    workers: int = 2,
    launcher_exit: int | None = 0,
    complete_after: str = "3s",
    implementation: str = "OpenMPI",
    creation_policy: str | None = None,
    worker_template: Obj | None = None,
) -> Obj:
    """A Kubeflow MPIJob of ``workers`` workers (cleanPodPolicy Running, no retries)
    whose launcher exits ``launcher_exit`` after ``complete_after``, or runs until
    deleted when ``launcher_exit`` is None."""
    behaviour = (
        {}
        if launcher_exit is None
        else {COMPLETE_AFTER: complete_after, EXIT_CODE: str(launcher_exit)}
    )
    launcher = {
        "name": "launcher",
        "image": "mpi-pi",
        "command": ["mpirun", "-n", str(workers), "/home/pi"],
    }
    worker = {"name": "worker", "image": "mpi-pi"}
    spec: Obj = {
        "slotsPerWorker": 1,
        "mpiImplementation": implementation,
        "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "template": {
                    "metadata": {"annotations": behaviour},
                    "spec": {"containers": [launcher]},
                },
            },
            "Worker": {
                "replicas": workers,
                "template": worker_template or {"spec": {"containers": [worker]}},
            },
        },
    }
    if creation_policy:
        spec["launcherCreationPolicy"] = creation_policy
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": spec,
    }


def with_kwok_behaviour(
    job: Obj,
    *,
    launcher_runs_for: str,
    start_delay: str | None = None,
    exit_code: str | None = None,
) -> Obj:
    """A copy of ``job`` whose launcher pod finishes on the fake nodes ``launcher_runs_for``
    after it starts (with ``exit_code``, default 0) and whose pods start after
    ``start_delay``. The workers run until the operator deletes them."""
    job = copy.deepcopy(job)
    specs = job["spec"]["mpiReplicaSpecs"]
    for role, spec in specs.items():
        meta = spec.setdefault("template", {}).setdefault("metadata", {})
        annotations = meta.setdefault("annotations", {})
        if start_delay:
            annotations[START_DELAY] = start_delay
        if role == "Launcher":
            annotations[COMPLETE_AFTER] = launcher_runs_for
            if exit_code is not None:
                annotations[EXIT_CODE] = exit_code
    return job


def _pod_templates(job: Obj) -> list[Obj]:
    """The pod templates of a Kubeflow (``mpiReplicaSpecs``) or T9k (``worker``) MPIJob."""
    spec = job["spec"]
    replicas = list((spec.get("mpiReplicaSpecs") or {}).values())
    if "worker" in spec:
        replicas.append(spec["worker"])
    return [r.setdefault("template", {}) for r in replicas]


def on_real_node(job: Obj) -> Obj:
    """A copy of ``job`` whose pods run on the real node (shape ``real``): its label as
    nodeSelector and a toleration of its taint in every pod template, and no CPU
    requests or limits: the node has this machine's cores (two on CI), fewer than the
    examples ask for (one each for a launcher and two workers)."""
    job = copy.deepcopy(job)
    key, value = REAL_NODE_LABEL
    for template in _pod_templates(job):
        pod = template.setdefault("spec", {})
        pod.setdefault("nodeSelector", {})[key] = value
        toleration = {"operator": "Equal", **REAL_NODE_TAINT}
        pod["tolerations"] = [*pod.get("tolerations", []), toleration]
        for container in pod.get("containers", []):
            for kind in ("requests", "limits"):
                (container.get("resources") or {}).get(kind, {}).pop("cpu", None)
    return job
