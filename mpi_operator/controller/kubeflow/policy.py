"""The failure policy (ours), pure: who failed, what the rules decide, and the
judgement of a sync's failed pods.

* The culprit (:mod:`~mpi_operator.controller.kubeflow.culprit`): who failed first.
* The verdict: ``runPolicy.failurePolicy``'s rules, matched in order against the
  failed pods, restart the job, restart only what failed, fail it, or ignore a pod.
* The judgement: the verdict on the current attempt's failed pods, with the pods
  still to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mpi_operator.api.object_model import Obj
from mpi_operator.api.v2beta1 import (
    ConditionType,
    ExitCodesOperator,
    FailurePolicy,
    FailurePolicyAction,
    FailurePolicyRule,
    MPIJob,
    OnExitCodes,
)
from mpi_operator.client import WARNING
from mpi_operator.controller.core.objects import TRUE, get_condition
from mpi_operator.controller.core.writes import Event
from mpi_operator.controller.kubeflow.context import attempt_of, restart_attempt
from mpi_operator.controller.kubeflow.culprit import FailedPod, failed_pods

# What ``spec.runPolicy.failurePolicy`` decides for a job's failed pods (pure; ours).
#
# Modelled on JobSet's failurePolicy (maxRestarts, ordered rules, a default restart)
# and batch/v1's podFailurePolicy (exit codes In/NotIn, pod conditions, FailJob and
# Ignore). Each failed pod is matched against the rules in order; the first rule that
# matches gives its action, and a pod no rule matches restarts the job. Across the
# pods, FailJob beats RestartJob, which beats RestartFailed (replace only the failed
# pods and the launcher), which beats Ignore; a restart past maxRestarts fails the job
# instead.


RESTARTING_REASON = "MPIJobRestarting"
#: A RestartFailed restart: its Restarting condition's reason, which tells the syncs of
#: the restart to replace only the failed workers and the launcher.
RESTARTING_FAILED_REASON = "MPIJobRestartingFailed"
FAIL_JOB_REASON = "PodFailurePolicy"
REACHED_MAX_RESTARTS_REASON = "ReachedMaxRestarts"
IGNORED_REASON = "PodFailureIgnored"
DEFAULT_RULE = "default"

_SEVERITY = {
    FailurePolicyAction.IGNORE: 0,
    FailurePolicyAction.RESTART_FAILED: 1,
    FailurePolicyAction.RESTART_JOB: 2,
    FailurePolicyAction.FAIL_JOB: 3,
}


@dataclass(frozen=True, slots=True)
class Match:
    """One failed pod and the rule that decided its action."""

    failure: FailedPod
    action: FailurePolicyAction
    rule: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The job-wide action (None when every failure is ignored), the reason and message
    of its condition and event, and the failed pods to delete and recreate."""

    action: FailurePolicyAction | None
    reason: str = ""
    message: str = ""
    culprit: FailedPod | None = None
    ignored: list[Match] = field(default_factory=list)


def _exit_codes_match(requirement: OnExitCodes, failure: FailedPod) -> bool:
    codes = [
        code
        for container, code, _ in failure.terminations
        if requirement.container_name in (None, "", container)
    ]
    values = set(requirement.values or [])
    if requirement.operator == ExitCodesOperator.NOT_IN:
        return any(code not in values for code in codes)
    return any(code in values for code in codes)


def rule_matches(rule: FailurePolicyRule, failure: FailedPod) -> bool:
    """Every criterion the rule gives must match; a rule without criteria matches all."""
    if rule.target_replica_types and failure.role.capitalize() not in rule.target_replica_types:
        return False
    if rule.on_exit_codes is not None and not _exit_codes_match(rule.on_exit_codes, failure):
        return False
    if rule.on_termination_reasons is not None:
        reasons = {reason for _, _, reason in failure.terminations}
        if not reasons & set(rule.on_termination_reasons):
            return False
    if rule.on_pod_reasons is not None and failure.pod_reason not in rule.on_pod_reasons:
        return False
    if rule.on_pod_conditions is not None:
        present = set(failure.conditions)
        wanted = {(c.type, c.status or "True") for c in rule.on_pod_conditions}
        if not present & wanted:
            return False
    return True


def match(policy: FailurePolicy, failure: FailedPod) -> Match:
    for i, rule in enumerate(policy.rules or []):
        if rule_matches(rule, failure):
            action = FailurePolicyAction(rule.action or FailurePolicyAction.RESTART_JOB)
            return Match(failure, action, rule.name or f"rules[{i}]")
    return Match(failure, FailurePolicyAction.RESTART_JOB, DEFAULT_RULE)


def rule_on(policy: FailurePolicy, failures: Sequence[FailedPod], restart_count: int) -> Verdict:
    """``failures`` come earliest first; the earliest of the most severe action names it."""
    matches = [match(policy, f) for f in failures]
    if not matches:
        return Verdict(action=None)
    worst = max(matches, key=lambda m: _SEVERITY[m.action])
    if worst.action == FailurePolicyAction.IGNORE:
        return Verdict(action=None, ignored=matches)
    cause = worst.failure.message
    if worst.action == FailurePolicyAction.FAIL_JOB:
        message = f"rule {worst.rule} fails the job: {cause}"
        return Verdict(worst.action, FAIL_JOB_REASON, message, worst.failure)
    limit = policy.max_restarts or 0
    if restart_count >= limit:
        message = f"reached maxRestarts {limit} (rule {worst.rule}): {cause}"
        return Verdict(
            FailurePolicyAction.FAIL_JOB, REACHED_MAX_RESTARTS_REASON, message, worst.failure
        )
    message = f"restart {restart_count + 1} of {limit} (rule {worst.rule}): {cause}"
    if worst.action == FailurePolicyAction.RESTART_FAILED:
        message = f"{message}; only the failed pods and the launcher are replaced"
        return Verdict(worst.action, RESTARTING_FAILED_REASON, message, worst.failure)
    return Verdict(worst.action, RESTARTING_REASON, message, worst.failure)


def whole_restart(verdict: Verdict, why: str) -> Verdict:
    """A RestartFailed verdict that must restart everything instead, saying why."""
    message = f"{verdict.message.split('; only the failed')[0]}; a whole restart: {why}"
    return Verdict(FailurePolicyAction.RESTART_JOB, RESTARTING_REASON, message, verdict.culprit)


def ignored_message(ignored: Match) -> str:
    return (
        f"rule {ignored.rule} ignores the failure, the pod is recreated: {ignored.failure.message}"
    )


# The failure policy's judgement of a sync's failed pods (pure).


@dataclass(slots=True)
class Judgement:
    """The verdict on this sync's failed pods, and the pods still to report on."""

    verdict: Verdict
    launcher_pods: list[Obj]
    workers: list[Obj]
    events: list[Event] = field(default_factory=list)


def restarting(job: MPIJob) -> str | None:
    """The reason of the job's Restarting condition while a restart is under way."""
    condition = get_condition(job.status, ConditionType.RESTARTING) if job.status else None
    if condition is None or condition.status != TRUE:
        return None
    return condition.reason or RESTARTING_REASON


def replaces_failed_only(job: MPIJob) -> bool:
    """A RestartFailed restart is under way: healthy workers of earlier attempts stay."""
    return restarting(job) == RESTARTING_FAILED_REASON


def replacing_failed(mpijob: Obj) -> bool:
    """A cached MPIJob (as the API serves it) is in a RestartFailed restart: its
    Restarting condition is True with the RestartFailed reason."""
    conditions = (mpijob.get("status") or {}).get("conditions") or []
    return any(
        c.get("type") == ConditionType.RESTARTING
        and c.get("status") == TRUE
        and c.get("reason") == RESTARTING_FAILED_REASON
        for c in conditions
    )


def judge(
    policy: FailurePolicy,
    job: MPIJob,
    launcher_pods: Sequence[Obj],
    workers: Sequence[Obj],
    deleted: frozenset[str] = frozenset(),
) -> Judgement:
    """Decides on the failed pods of the current attempt (pure). Pods whose uid is in
    ``deleted`` (an earlier sync deleted them, ignoring their failure) are left out."""
    attempt = restart_attempt(job)
    launcher_pods = [p for p in launcher_pods if p["metadata"].get("uid") not in deleted]
    workers = [w for w in workers if w["metadata"].get("uid") not in deleted]
    # A whole restart's earlier workers are gone before this runs; a RestartFailed
    # restart's healthy ones are still the job's, and judged.
    current = [w for w in workers if attempt_of(w) <= attempt]
    verdict = rule_on(policy, failed_pods([*current, *launcher_pods]), attempt)
    if verdict.action == FailurePolicyAction.RESTART_FAILED and job.spec.run_launcher_as_worker:
        # The launcher is a host of the ranks as well: mpirun's hosts change with it.
        verdict = whole_restart(verdict, "the launcher runs ranks (runLauncherAsWorker)")
    gone = {m.failure.uid for m in verdict.ignored}
    events = [Event(WARNING, IGNORED_REASON, ignored_message(m)) for m in verdict.ignored]
    return Judgement(
        verdict,
        [p for p in launcher_pods if p["metadata"].get("uid") not in gone],
        [w for w in workers if w["metadata"].get("uid") not in gone],
        events,
    )
