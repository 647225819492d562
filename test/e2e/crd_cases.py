"""MPIJobs for the CRD's admission tests: ones the API server must reject, each with
the text naming the offending field that its answer must contain, and ones it must
accept."""

from __future__ import annotations

import copy
from typing import Any

LAUNCHER = "spec.mpiReplicaSpecs.Launcher"
WORKER = "spec.mpiReplicaSpecs.Worker"


def template(name: str = "c", **container: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": name, "image": "busybox", **container}]}}


def mpijob(name: str = "job", workers: int | None = 2, **spec: Any) -> dict[str, Any]:
    replicas: dict[str, Any] = {"Launcher": {"replicas": 1, "template": template("launcher")}}
    if workers is not None:
        replicas["Worker"] = {"replicas": workers, "template": template("worker")}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {"mpiReplicaSpecs": replicas, **spec},
    }


def with_path(job: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``job`` with the dotted ``path`` set (``None`` deletes it)."""
    job = copy.deepcopy(job)
    *parents, last = path.split(".")
    node = job
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return job


#: name -> (MPIJob, text the rejection must contain)
BAD = {
    "launcher-replicas-2": (
        with_path(mpijob(), f"{LAUNCHER}.replicas", 2),
        "spec.mpiReplicaSpecs[Launcher].replicas must be 1",
    ),
    "launcher-replicas-0": (
        with_path(mpijob(), f"{LAUNCHER}.replicas", 0),
        "spec.mpiReplicaSpecs[Launcher].replicas must be 1",
    ),
    "worker-replicas-0": (
        mpijob(workers=0),
        "spec.mpiReplicaSpecs[Worker].replicas must be greater than or equal to 1",
    ),
    "worker-replicas-negative": (
        mpijob(workers=-3),
        "spec.mpiReplicaSpecs[Worker].replicas must be greater than or equal to 1",
    ),
    # Ours (not in the reference CRD): the operator's worker cap, at admission.
    "worker-replicas-over-the-cap": (
        mpijob(workers=100_001),
        "spec.mpiReplicaSpecs[Worker].replicas must be no more than 100000",
    ),
    "worker-replicas-int32-max": (
        mpijob(workers=2**31 - 1),
        "spec.mpiReplicaSpecs[Worker].replicas must be no more than 100000",
    ),
    "missing-launcher": (
        with_path(mpijob(), LAUNCHER, None),
        "spec.mpiReplicaSpecs[Launcher] is required",
    ),
    "missing-replica-specs": (
        with_path(mpijob(), "spec.mpiReplicaSpecs", None),
        "spec.mpiReplicaSpecs: Required value",
    ),
    "negative-slots": (
        mpijob(slotsPerWorker=-1),
        "spec.slotsPerWorker: Invalid value: -1",
    ),
    "negative-ttl": (
        mpijob(runPolicy={"ttlSecondsAfterFinished": -1}),
        "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -1",
    ),
    "negative-deadline": (
        mpijob(runPolicy={"activeDeadlineSeconds": -5}),
        "spec.runPolicy.activeDeadlineSeconds: Invalid value: -5",
    ),
    "negative-backoff": (
        mpijob(runPolicy={"backoffLimit": -1}),
        "spec.runPolicy.backoffLimit: Invalid value: -1",
    ),
    "unknown-mpi-implementation": (
        mpijob(mpiImplementation="LAM"),
        'spec.mpiImplementation: Unsupported value: "LAM"',
    ),
    "unknown-clean-pod-policy": (
        mpijob(runPolicy={"cleanPodPolicy": "Sometimes"}),
        'spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes"',
    ),
    "unknown-launcher-creation-policy": (
        mpijob(launcherCreationPolicy="Eventually"),
        'spec.launcherCreationPolicy: Unsupported value: "Eventually"',
    ),
    "unknown-restart-policy": (
        with_path(mpijob(), f"{WORKER}.restartPolicy", "Sometimes"),
        'spec.mpiReplicaSpecs.Worker.restartPolicy: Unsupported value: "Sometimes"',
    ),
    "unknown-managed-by": (
        mpijob(runPolicy={"managedBy": "someone/else"}),
        'spec.runPolicy.managedBy: Unsupported value: "someone/else"',
    ),
    "bad-min-resources-quantity": (
        mpijob(runPolicy={"schedulingPolicy": {"minResources": {"cpu": "lots"}}}),
        'spec.runPolicy.schedulingPolicy.minResources.cpu: Invalid value: "lots"',
    ),
    "bad-container-quantity": (
        with_path(
            mpijob(),
            f"{WORKER}.template",
            template("worker", resources={"limits": {"memory": "1 GB"}}),
        ),
        "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].resources.limits.memory",
    ),
    "wrong-type": (
        mpijob(slotsPerWorker="two"),
        'spec.slotsPerWorker: Invalid value: "string"',
    ),
    "unknown-ttl-policy": (
        mpijob(runPolicy={"ttlSecondsAfterFinishedPolicy": "Everything"}),
        'spec.runPolicy.ttlSecondsAfterFinishedPolicy: Unsupported value: "Everything"',
    ),
    "negative-workers-ready-timeout": (
        mpijob(runPolicy={"workersReadyTimeoutSeconds": -1}),
        "spec.runPolicy.workersReadyTimeoutSeconds: Invalid value: -1",
    ),
    "failure-policy-negative-max-restarts": (
        mpijob(runPolicy={"failurePolicy": {"maxRestarts": -1}}),
        "spec.runPolicy.failurePolicy.maxRestarts: Invalid value: -1",
    ),
    "failure-policy-unknown-action": (
        mpijob(runPolicy={"failurePolicy": {"rules": [{"action": "Retry"}]}}),
        'spec.runPolicy.failurePolicy.rules[0].action: Unsupported value: "Retry"',
    ),
    "failure-policy-missing-action": (
        mpijob(runPolicy={"failurePolicy": {"rules": [{"name": "a"}]}}),
        "spec.runPolicy.failurePolicy.rules[0].action: Required value",
    ),
    "failure-policy-unknown-replica-type": (
        mpijob(
            runPolicy={
                "failurePolicy": {"rules": [{"action": "Ignore", "targetReplicaTypes": ["Chief"]}]}
            }
        ),
        'spec.runPolicy.failurePolicy.rules[0].targetReplicaTypes[0]: Unsupported value: "Chief"',
    ),
    "failure-policy-unknown-operator": (
        mpijob(
            runPolicy={
                "failurePolicy": {
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"operator": "Is", "values": [1]}}
                    ]
                }
            }
        ),
        'spec.runPolicy.failurePolicy.rules[0].onExitCodes.operator: Unsupported value: "Is"',
    ),
    "failure-policy-no-exit-codes": (
        mpijob(
            runPolicy={
                "failurePolicy": {
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": []}}
                    ]
                }
            }
        ),
        "spec.runPolicy.failurePolicy.rules[].onExitCodes.values must have at least one exit code",
    ),
    "failure-policy-duplicate-names": (
        mpijob(
            runPolicy={
                "failurePolicy": {
                    "rules": [{"name": "a", "action": "FailJob"}, {"name": "a", "action": "Ignore"}]
                }
            }
        ),
        "spec.runPolicy.failurePolicy.rules[].name must be unique",
    ),
    "elastic-min-zero": (
        mpijob(elasticPolicy={"minReplicas": 0}),
        "spec.elasticPolicy.minReplicas must be greater than or equal to 1",
    ),
    "elastic-min-over-max": (
        mpijob(workers=2, elasticPolicy={"minReplicas": 3, "maxReplicas": 2}),
        "spec.elasticPolicy.minReplicas must be no more than spec.elasticPolicy.maxReplicas",
    ),
    "elastic-workers-below-min": (
        mpijob(workers=1, elasticPolicy={"minReplicas": 2, "maxReplicas": 4}),
        "spec.mpiReplicaSpecs[Worker].replicas must be at least spec.elasticPolicy.minReplicas",
    ),
    "elastic-below-min-timeout-negative": (
        mpijob(elasticPolicy={"minReplicas": 1, "belowMinTimeoutSeconds": -1}),
        "spec.elasticPolicy.belowMinTimeoutSeconds must be greater than or equal to 0",
    ),
    "elastic-workers-over-max": (
        mpijob(workers=5, elasticPolicy={"minReplicas": 1, "maxReplicas": 4}),
        "spec.mpiReplicaSpecs[Worker].replicas must be no more than spec.elasticPolicy.maxReplicas",
    ),
}

GOOD = {
    "elastic": mpijob(workers=2, elasticPolicy={"minReplicas": 1, "maxReplicas": 4}),
    "elastic-min-only": mpijob(workers=2, elasticPolicy={"minReplicas": 2}),
    "elastic-below-min-timeout": mpijob(
        workers=2, elasticPolicy={"minReplicas": 1, "belowMinTimeoutSeconds": 30}
    ),
    "openmpi": mpijob(mpiImplementation="OpenMPI"),
    "intel": mpijob(mpiImplementation="Intel", slotsPerWorker=4),
    "mpich": mpijob(mpiImplementation="MPICH", launcherCreationPolicy="WaitForWorkersReady"),
    "launcher-as-worker-no-worker": mpijob(workers=None, runLauncherAsWorker=True),
    "launcher-only": mpijob(workers=None),
    "worker-replicas-at-the-cap": mpijob(workers=100_000),
    "replicas-unset": with_path(
        with_path(mpijob(), f"{LAUNCHER}.replicas", None), f"{WORKER}.replicas", None
    ),
    "zero-slots-and-limits": mpijob(
        slotsPerWorker=0,
        runPolicy={"ttlSecondsAfterFinished": 0, "activeDeadlineSeconds": 0, "backoffLimit": 0},
    ),
    "suspended": mpijob(runPolicy={"suspend": True, "cleanPodPolicy": "All"}),
    "scheduling-policy": mpijob(
        runPolicy={
            "cleanPodPolicy": "Running",
            "schedulingPolicy": {
                "minAvailable": 3,
                "queue": "default",
                "minResources": {"cpu": "3", "memory": "1.5Gi", "nvidia.com/gpu": 2},
                "priorityClass": "high",
                "scheduleTimeoutSeconds": 60,
            },
        }
    ),
    "failure-policy": mpijob(
        runPolicy={
            "failurePolicy": {
                "maxRestarts": 3,
                "rules": [
                    {
                        "name": "oom",
                        "action": "RestartJob",
                        "targetReplicaTypes": ["Worker", "Launcher"],
                        "onExitCodes": {
                            "containerName": "w",
                            "operator": "NotIn",
                            "values": [0, 1],
                        },
                        "onTerminationReasons": ["OOMKilled"],
                        "onPodReasons": ["Evicted"],
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    },
                    {"action": "Ignore"},
                    {"name": "rest", "action": "FailJob"},
                ],
            }
        }
    ),
    "ttl-policy": mpijob(
        runPolicy={"ttlSecondsAfterFinished": 30, "ttlSecondsAfterFinishedPolicy": "MPIJob"}
    ),
    "workers-ready-timeout": mpijob(runPolicy={"workersReadyTimeoutSeconds": 0}),
    "managed-by-kueue": mpijob(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}),
    "managed-by-us": mpijob(runPolicy={"managedBy": "kubeflow.org/mpi-operator"}),
    # The API accepts every restart policy; the operator supports only two of them.
    "restart-policies": with_path(
        with_path(mpijob(), f"{LAUNCHER}.restartPolicy", "ExitCode"),
        f"{WORKER}.restartPolicy",
        "Always",
    ),
    # Empty means the default to the operator, and the reference CRD took it.
    "empty-policies": with_path(mpijob(launcherCreationPolicy=""), f"{LAUNCHER}.restartPolicy", ""),
    "clean-pod-policy-none": mpijob(runPolicy={"cleanPodPolicy": "None"}, sshAuthMountPath="/ssh"),
    "rich-pod-template": with_path(
        mpijob(),
        f"{WORKER}.template",
        {
            "metadata": {
                "labels": {"app": "x"},
                "annotations": {"a": "b"},
                "name": "ignored",
            },
            "spec": {
                "containers": [
                    {
                        "name": "worker",
                        "image": "busybox",
                        "ports": [{"containerPort": 22}, {"containerPort": 22, "protocol": "UDP"}],
                        "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                        "livenessProbe": {"tcpSocket": {"port": "ssh"}},
                        "readinessProbe": {"httpGet": {"port": 8080, "path": "/"}},
                        "env": [{"name": "A", "value": "1"}],
                    }
                ],
                "volumes": [
                    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                ],
                "tolerations": [{"operator": "Exists"}],
                "restartPolicy": "Never",
            },
        },
    ),
}
