"""What the MPIJob CRD schema declares beyond the models' types: descriptions, formats,
bounds, enums, required fields and CEL rules, by "Model.jsonField"."""

from __future__ import annotations

from typing import Any

from mpi_operator.api.limits import MAX_WORKER_REPLICAS
from mpi_operator.api.v2beta1 import defaults as v2defaults
from mpi_operator.api.v2beta1 import types as v2

from .openapi import Schema

DESCRIPTIONS: dict[str, str] = {
    "MPIJob": "MPIJob runs an MPI program: one launcher pod runs mpirun against worker pods.",
    "MPIJob.apiVersion": "Versioned schema of this object, kubeflow.org/v2beta1.",
    "MPIJob.kind": "The REST resource this object represents, MPIJob.",
    "MPIJob.spec": "Desired state of the MPIJob.",
    "MPIJob.status": "Observed state of the MPIJob, written by the operator.",
    "MPIJobSpec.slotsPerWorker": "Slots of each worker in the hostfile. Defaults to 1.",
    "MPIJobSpec.runLauncherAsWorker": (
        "Whether the launcher also runs MPI processes, listed first in the hostfile. "
        "Defaults to false."
    ),
    "MPIJobSpec.runPolicy": "Policies of the job's lifecycle: clean-up, deadlines, suspension.",
    "MPIJobSpec.mpiReplicaSpecs": (
        "The Launcher (required, 1 replica) and Worker (optional) replica specs, by type."
    ),
    "MPIJobSpec.sshAuthMountPath": (
        "Directory where the SSH keys are mounted. Defaults to /root/.ssh."
    ),
    "MPIJobSpec.launcherCreationPolicy": (
        "AtStartup creates the launcher with the workers; WaitForWorkersReady only "
        "once every worker is ready. Defaults to AtStartup."
    ),
    "MPIJobSpec.mpiImplementation": (
        "MPI implementation the image uses: OpenMPI (default), Intel or MPICH."
    ),
    "MPIJobSpec.elasticPolicy": (
        "Bounds of the Worker replicas, within which the scale subresource (kubectl scale, "
        "a HorizontalPodAutoscaler) moves them; a scale outside them is refused. Unset: "
        "no bounds beyond Worker replicas >= 1."
    ),
    "ElasticPolicy": "Bounds of the Worker replicas.",
    "ElasticPolicy.minReplicas": "Fewest Worker replicas, at least 1. Unset: 1.",
    "ElasticPolicy.maxReplicas": "Most Worker replicas. Unset: the operator's worker cap.",
    "ElasticPolicy.belowMinTimeoutSeconds": (
        "Seconds a running job may have fewer than minReplicas workers Running before the "
        "failure policy applies (without one, the job fails). Until then a lost worker "
        "only shrinks the job: it leaves discover_hosts.sh and is recreated. Unset: 300."
    ),
    "RunPolicy.cleanPodPolicy": (
        "Which worker pods are deleted once the job finishes: None keeps them all, Running "
        "deletes those still running or pending, All deletes every one. The launcher Job "
        "is not deleted by this policy (see ttlSecondsAfterFinished). Defaults to None."
    ),
    "RunPolicy.ttlSecondsAfterFinished": (
        "Seconds after the job finishes before its launcher Job (and so the launcher pod) "
        "is deleted; the MPIJob and its other children stay. This is the default meaning, "
        "the reference's (ttlSecondsAfterFinishedPolicy unset or Launcher); with "
        "ttlSecondsAfterFinishedPolicy MPIJob, the MPIJob itself is deleted, and all its "
        "children with it. Unset: nothing is deleted."
    ),
    "RunPolicy.activeDeadlineSeconds": (
        "Seconds the launcher Job may be active (its activeDeadlineSeconds); then Kubernetes "
        "stops it and the MPIJob fails. Unset: no deadline."
    ),
    "RunPolicy.backoffLimit": (
        "Retries of the launcher pod (the launcher Job's backoffLimit) before the MPIJob "
        "fails. Unset: the Job's default, 6."
    ),
    "RunPolicy.schedulingPolicy": (
        "Gang-scheduling settings, copied to the job's PodGroup when the operator runs with "
        "--gang-scheduling; ignored otherwise."
    ),
    "RunPolicy.suspend": (
        "Whether the job is suspended: its pods are deleted and not created until it is "
        "resumed. Defaults to false."
    ),
    "RunPolicy.managedBy": (
        "The controller that reconciles this job: kubeflow.org/mpi-operator (unset means "
        "this one) or kueue.x-k8s.io/multikueue. Immutable."
    ),
    "RunPolicy.ttlSecondsAfterFinishedPolicy": (
        "What ttlSecondsAfterFinished deletes. Launcher (the default, and the reference's "
        "only meaning): the launcher Job; MPIJob: the MPIJob, and all its children with it. "
        "An addition to the reference API."
    ),
    "RunPolicy.workersReadyTimeoutSeconds": (
        "Seconds the workers have to become Ready after the job starts, resumes or "
        "restarts; a job that has not started running by then fails (reason "
        "WorkersNotReady). Unset: no limit. An addition to the reference API."
    ),
    "RunPolicy.failurePolicy": (
        "What a failed launcher or worker pod does to the job. Rules are tried in order and "
        "the first that matches acts; a failure no rule matches restarts the job. Unset: "
        "failures are handled as by the reference (the launcher Job's backoffLimit). An "
        "addition to the reference API."
    ),
    "FailurePolicy.maxRestarts": (
        "Restarts of the whole job allowed; the next failure that would restart it fails "
        "it (reason ReachedMaxRestarts). Defaults to 0."
    ),
    "FailurePolicy.rules": "Ordered rules; the first that matches a failed pod decides.",
    "FailurePolicyRule": (
        "Matches a failed pod when every criterion given matches; no criterion matches any."
    ),
    "FailurePolicyRule.name": "Name of the rule, shown in events; unique. Defaults to rules[i].",
    "FailurePolicyRule.action": (
        "RestartJob: delete and recreate every worker pod and the launcher (counts towards "
        "maxRestarts); RestartFailed: recreate only the failed worker pods and the launcher, "
        "which starts when every worker is Ready again, while healthy workers keep running "
        "(counts towards maxRestarts); FailJob: fail the job; Ignore: delete the failed pod, "
        "which is recreated."
    ),
    "FailurePolicyRule.targetReplicaTypes": "Launcher, Worker: the pods the rule applies to.",
    "FailurePolicyRule.onExitCodes": (
        "Matches the exit code of the pod's first container that terminated non-zero."
    ),
    "FailurePolicyRule.onTerminationReasons": (
        "Matches that container's termination reason, e.g. OOMKilled or Error."
    ),
    "FailurePolicyRule.onPodReasons": "Matches the pod's status.reason, e.g. Evicted or NodeLost.",
    "FailurePolicyRule.onPodConditions": (
        "Matches when any of these pod conditions is present, e.g. DisruptionTarget."
    ),
    "OnExitCodes.containerName": "Only this container's exit code; unset: any container's.",
    "OnExitCodes.operator": "In or NotIn the values.",
    "OnExitCodes.values": "Exit codes.",
    "OnPodCondition.type": "Pod condition type, e.g. DisruptionTarget.",
    "OnPodCondition.status": "Its status: True (the default), False or Unknown.",
    "SchedulingPolicy.minAvailable": "Minimum number of pods the gang scheduler starts at once.",
    "SchedulingPolicy.queue": "Queue of the gang scheduler.",
    "SchedulingPolicy.minResources": "Minimum resources the gang needs to be scheduled.",
    "SchedulingPolicy.priorityClass": "Priority class of the PodGroup.",
    "SchedulingPolicy.scheduleTimeoutSeconds": "Seconds the gang may wait to be scheduled.",
    "ReplicaSpec": "Pods of one replica type.",
    "ReplicaSpec.replicas": "Number of pods. Launcher: 1 (the default). Worker: at least 1.",
    "ReplicaSpec.template": "Template of the pods; its restartPolicy is set from restartPolicy.",
    "ReplicaSpec.restartPolicy": (
        "Restart policy of the pods: Always, OnFailure, Never or ExitCode. The operator "
        "supports OnFailure (the Launcher's default) and Never (the Worker's default)."
    ),
    "JobStatus.conditions": "Conditions of the job; the most recently changed one is last.",
    "JobStatus.replicaStatuses": "Pod counts of each replica type.",
    "JobStatus.startTime": "When the operator first acknowledged the job (RFC 3339).",
    "JobStatus.completionTime": "When the job finished (RFC 3339).",
    "JobStatus.lastReconcileTime": "When the operator last reconciled the job (RFC 3339).",
    "JobStatus.state": (
        "Type of the latest condition that is true (Created, Running, Restarting, Suspended, "
        "Succeeded or Failed), for kubectl get's STATE column. An addition to the reference "
        "API."
    ),
    "JobStatus.restartCount": (
        "Restarts of the whole job by its failure policy. An addition to the reference API."
    ),
    "JobStatus.lastFailure": (
        "The pod failure that failed or last restarted the job. An addition to the reference API."
    ),
    "PodFailure": "A failed pod: which one, its first failed container, and why.",
    "PodFailure.pod": "Name of the pod.",
    "PodFailure.replicaType": "Launcher or Worker.",
    "PodFailure.container": "The first container that terminated with a non-zero exit code.",
    "PodFailure.exitCode": "That container's exit code.",
    "PodFailure.reason": "That container's termination reason, e.g. OOMKilled or Error.",
    "PodFailure.podReason": "The pod's own reason, e.g. Evicted.",
    "PodFailure.message": (
        "All of it in one line, e.g. worker pi-worker-3 container trainer terminated: "
        "OOMKilled (exit 137)."
    ),
    "PodFailure.time": "When the operator saw the failure (RFC 3339).",
    "JobCondition": "One condition of the job.",
    "JobCondition.type": (
        "Created, Running, Restarting, Succeeded, Suspended or Failed; BelowReplicas for a "
        "job with an elastic policy that runs fewer workers than its replicas."
    ),
    "JobCondition.status": "True, False or Unknown.",
    "JobCondition.reason": "Machine-readable reason of the last transition.",
    "JobCondition.message": "Human-readable details of the last transition.",
    "JobCondition.lastUpdateTime": "When the condition was last updated.",
    "JobCondition.lastTransitionTime": "When the condition last changed status.",
    "ReplicaStatus": "Pod counts of one replica type.",
    "ReplicaStatus.active": "Running pods.",
    "ReplicaStatus.succeeded": "Pods that succeeded.",
    "ReplicaStatus.failed": "Pods that failed.",
    "ReplicaStatus.labelSelector": "Label selector of the replica type's pods.",
    "ReplicaStatus.selector": "The label selector in its string form.",
}

INT64 = {"RunPolicy.activeDeadlineSeconds"}
DATE_TIME = {
    "JobStatus.startTime",
    "JobStatus.completionTime",
    "JobStatus.lastReconcileTime",
    "JobCondition.lastUpdateTime",
    "JobCondition.lastTransitionTime",
    "PodFailure.time",
}
NON_NEGATIVE = {
    "MPIJobSpec.slotsPerWorker",
    "RunPolicy.ttlSecondsAfterFinished",
    "RunPolicy.activeDeadlineSeconds",
    "RunPolicy.backoffLimit",
    "FailurePolicy.maxRestarts",
    "RunPolicy.workersReadyTimeoutSeconds",
}
_RULES = "spec.runPolicy.failurePolicy.rules"
MAX_ITEMS = {
    "FailurePolicy.rules": 20,
    "FailurePolicyRule.targetReplicaTypes": 2,
    "FailurePolicyRule.onTerminationReasons": 255,
    "FailurePolicyRule.onPodReasons": 255,
    "FailurePolicyRule.onPodConditions": 20,
    "OnExitCodes.values": 255,
}
MAX_LENGTH = {
    "FailurePolicyRule.name": 63,
    "FailurePolicyRule.onTerminationReasons": 128,
    "FailurePolicyRule.onPodReasons": 128,
    "OnExitCodes.containerName": 63,
    "OnPodCondition.type": 316,
}
ITEM_ENUMS = {"FailurePolicyRule.targetReplicaTypes": [r.value for r in v2.ReplicaType]}
# An empty launcherCreationPolicy or restartPolicy means the default to the operator,
# and the reference CRD takes it: it stays valid. An empty cleanPodPolicy, managedBy or
# mpiImplementation is an error either way.
ENUMS: dict[str, list[str]] = {
    "RunPolicy.cleanPodPolicy": [p.value for p in v2.CleanPodPolicy],
    "RunPolicy.managedBy": [m.value for m in v2.ManagedBy],
    "MPIJobSpec.mpiImplementation": [i.value for i in v2.MPIImplementation],
    "MPIJobSpec.launcherCreationPolicy": [p.value for p in v2.LauncherCreationPolicy] + [""],
    "ReplicaSpec.restartPolicy": [p.value for p in v2.RestartPolicy] + [""],
    "JobCondition.status": ["True", "False", "Unknown"],
    "FailurePolicyRule.action": [a.value for a in v2.FailurePolicyAction],
    "RunPolicy.ttlSecondsAfterFinishedPolicy": [p.value for p in v2.TTLPolicy],
    "OnExitCodes.operator": [o.value for o in v2.ExitCodesOperator],
    "OnPodCondition.status": ["True", "False", "Unknown"],
}
# Defaults the API server applies, as the reference operator's CRD does; the
# operator applies the same ones (mpi_operator.api.v2beta1.defaults).
DEFAULTS: dict[str, Any] = {
    "MPIJobSpec.slotsPerWorker": 1,
    "MPIJobSpec.runLauncherAsWorker": False,
    "MPIJobSpec.sshAuthMountPath": v2defaults.DEFAULT_SSH_AUTH_MOUNT_PATH,
    "MPIJobSpec.launcherCreationPolicy": v2.LauncherCreationPolicy.AT_STARTUP.value,
    "MPIJobSpec.mpiImplementation": v2.MPIImplementation.OPEN_MPI.value,
    "RunPolicy.suspend": False,
}
REQUIRED = {
    "MPIJobSpec.mpiReplicaSpecs",
    "FailurePolicyRule.action",
    "OnExitCodes.operator",
    "OnExitCodes.values",
    "OnPodCondition.type",
}
NOT_REQUIRED = {"MPIJob.spec"}

LAUNCHER = v2.ReplicaType.LAUNCHER.value
WORKER = v2.ReplicaType.WORKER.value
_SPECS = "spec.mpiReplicaSpecs"

# CEL rules, by "Model.jsonField" (or "Model" for the model's own schema). Each
# message names the field it is about.
_ELASTIC = "spec.elasticPolicy"


def _worker_bound(bound: str, op: str, words: str) -> Schema:
    """The rule that keeps the Worker replicas within one bound of the elastic policy; a
    scale request (kubectl scale, an HPA) outside it is refused with its message. (A
    messageExpression printing both values is past the API server's CEL cost budget.)"""
    replicas = f"self.mpiReplicaSpecs.{WORKER}.replicas"
    return {
        "rule": (
            f"!has(self.elasticPolicy) || !has(self.elasticPolicy.{bound}) "
            f"|| !has(self.mpiReplicaSpecs) || !('{WORKER}' in self.mpiReplicaSpecs) "
            f"|| !has({replicas}) || {replicas} {op} self.elasticPolicy.{bound}"
        ),
        "message": f"{_SPECS}[{WORKER}].replicas must be {words} {_ELASTIC}.{bound}",
    }


VALIDATIONS: dict[str, list[Schema]] = {
    "MPIJobSpec.mpiReplicaSpecs": [
        {
            "rule": f"'{LAUNCHER}' in self",
            "message": f"{_SPECS}[{LAUNCHER}] is required",
            "reason": "FieldValueRequired",
        },
        {
            "rule": (
                f"!('{LAUNCHER}' in self) || !has(self.{LAUNCHER}.replicas) "
                f"|| self.{LAUNCHER}.replicas == 1"
            ),
            "message": f"{_SPECS}[{LAUNCHER}].replicas must be 1",
        },
        {
            "rule": (
                f"!('{WORKER}' in self) || !has(self.{WORKER}.replicas) "
                f"|| self.{WORKER}.replicas >= 1"
            ),
            "message": f"{_SPECS}[{WORKER}].replicas must be greater than or equal to 1",
        },
        {
            # Ours: the operator's worker cap (mpi_operator.api.limits), at admission.
            "rule": (
                f"!('{WORKER}' in self) || !has(self.{WORKER}.replicas) "
                f"|| self.{WORKER}.replicas <= {MAX_WORKER_REPLICAS}"
            ),
            "message": f"{_SPECS}[{WORKER}].replicas must be no more than {MAX_WORKER_REPLICAS}",
        },
    ],
    "FailurePolicy.rules": [
        {
            "rule": (
                "self.all(r, !has(r.name) || self.exists_one(s, has(s.name) && s.name == r.name))"
            ),
            "message": f"{_RULES}[].name must be unique",
        },
    ],
    "OnExitCodes.values": [
        {
            "rule": "size(self) > 0",
            "message": f"{_RULES}[].onExitCodes.values must have at least one exit code",
        },
    ],
    "ElasticPolicy": [
        {
            "rule": "!has(self.minReplicas) || self.minReplicas >= 1",
            "message": f"{_ELASTIC}.minReplicas must be greater than or equal to 1",
            "fieldPath": ".minReplicas",
        },
        {
            "rule": f"!has(self.maxReplicas) || self.maxReplicas <= {MAX_WORKER_REPLICAS}",
            "message": f"{_ELASTIC}.maxReplicas must be no more than {MAX_WORKER_REPLICAS}",
            "fieldPath": ".maxReplicas",
        },
        {
            "rule": (
                "!has(self.minReplicas) || !has(self.maxReplicas) "
                "|| self.minReplicas <= self.maxReplicas"
            ),
            "message": f"{_ELASTIC}.minReplicas must be no more than {_ELASTIC}.maxReplicas",
            "fieldPath": ".minReplicas",
        },
        {
            "rule": "!has(self.belowMinTimeoutSeconds) || self.belowMinTimeoutSeconds >= 0",
            "message": f"{_ELASTIC}.belowMinTimeoutSeconds must be greater than or equal to 0",
            "fieldPath": ".belowMinTimeoutSeconds",
        },
    ],
    "MPIJobSpec": [
        {
            # Set, changed and removed alike: the whole of runPolicy.managedBy is compared.
            "rule": (
                "(has(self.runPolicy) && has(self.runPolicy.managedBy) "
                "? self.runPolicy.managedBy : '') == "
                "(has(oldSelf.runPolicy) && has(oldSelf.runPolicy.managedBy) "
                "? oldSelf.runPolicy.managedBy : '')"
            ),
            "message": "spec.runPolicy.managedBy is immutable",
            "fieldPath": ".runPolicy.managedBy",
        },
        # Ours: the elastic policy's bounds, which a scale request meets too.
        _worker_bound("minReplicas", ">=", "at least"),
        _worker_bound("maxReplicas", "<=", "no more than"),
    ],
}
