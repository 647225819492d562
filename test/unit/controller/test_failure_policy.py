"""The failure policy's decisions (pure), table by table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mpi_operator.api.v2beta1 import FailurePolicy, FailurePolicyAction, JobStatus
from mpi_operator.controller.kubeflow.conditions import TRUE, get_condition, update_conditions
from mpi_operator.controller.kubeflow.culprit import FailedPod, culprit, failed_pod
from mpi_operator.controller.kubeflow.policy import Verdict as Decision
from mpi_operator.controller.kubeflow.policy import match
from mpi_operator.controller.kubeflow.policy import rule_on as decide
from mpi_operator.controller.kubeflow.status import mark

RESTART, FAIL, IGNORE = (
    FailurePolicyAction.RESTART_JOB,
    FailurePolicyAction.FAIL_JOB,
    FailurePolicyAction.IGNORE,
)


def failure(
    pod: str = "pi-worker-1",
    role: str = "worker",
    code: int | None = 137,
    reason: str = "OOMKilled",
    container: str = "worker",
    pod_reason: str | None = None,
    conditions: tuple[tuple[str, str], ...] = (),
    at: str = "2026-11-25T10:00:01Z",
) -> FailedPod:
    return FailedPod(
        role=role,
        pod=pod,
        uid=pod + "-uid",
        container=container if code is not None else None,
        exit_code=code,
        reason=reason if code is not None else None,
        pod_reason=pod_reason,
        pod_message=None,
        conditions=conditions,
        terminations=((container, code, reason),) if code is not None else (),
        finished_at=at,
    )


def policy(*rules: dict[str, Any], max_restarts: int = 2) -> FailurePolicy:
    return FailurePolicy.model_validate({"maxRestarts": max_restarts, "rules": list(rules)})


EVICTED = failure(
    code=137, reason="Error", pod_reason="Evicted", conditions=(("DisruptionTarget", "True"),)
)


@pytest.mark.parametrize(
    ("rule", "given", "matches"),
    [
        ({"onExitCodes": {"operator": "In", "values": [137]}}, failure(), True),
        ({"onExitCodes": {"operator": "In", "values": [1, 2]}}, failure(), False),
        ({"onExitCodes": {"operator": "NotIn", "values": [1, 2]}}, failure(), True),
        ({"onExitCodes": {"operator": "NotIn", "values": [137]}}, failure(), False),
        (
            {"onExitCodes": {"containerName": "other", "operator": "In", "values": [137]}},
            failure(),
            False,
        ),
        (
            {"onExitCodes": {"containerName": "worker", "operator": "In", "values": [137]}},
            failure(),
            True,
        ),
        ({"onExitCodes": {"operator": "NotIn", "values": [1]}}, failure(code=None), False),
        ({"onTerminationReasons": ["OOMKilled"]}, failure(), True),
        ({"onTerminationReasons": ["Error"]}, failure(), False),
        ({"onPodReasons": ["Evicted"]}, EVICTED, True),
        ({"onPodReasons": ["Evicted"]}, failure(), False),
        ({"onPodConditions": [{"type": "DisruptionTarget"}]}, EVICTED, True),
        ({"onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}, EVICTED, False),
        ({"onPodConditions": [{"type": "DisruptionTarget"}]}, failure(), False),
        ({"targetReplicaTypes": ["Launcher"]}, failure(), False),
        ({"targetReplicaTypes": ["Worker"]}, failure(), True),
        ({"targetReplicaTypes": ["Launcher"]}, failure(role="launcher"), True),
        ({}, failure(), True),
        ({"targetReplicaTypes": ["Worker"], "onTerminationReasons": ["Error"]}, failure(), False),
    ],
)
def test_a_rule_matches_when_every_criterion_does(
    rule: dict[str, Any], given: FailedPod, matches: bool
) -> None:
    found = match(policy({"name": "r", "action": "FailJob", **rule}), given)
    assert (found.action, found.rule) == ((FAIL, "r") if matches else (RESTART, "default"))


def test_the_first_matching_rule_wins_and_unnamed_rules_are_numbered() -> None:
    rules = policy(
        {"action": "Ignore", "onPodReasons": ["Evicted"]},
        {"action": "FailJob"},
    )
    assert (match(rules, EVICTED).action, match(rules, EVICTED).rule) == (IGNORE, "rules[0]")
    assert (match(rules, failure()).action, match(rules, failure()).rule) == (FAIL, "rules[1]")


@pytest.mark.parametrize(
    ("restart_count", "action", "reason", "message"),
    [
        (
            0,
            RESTART,
            "MPIJobRestarting",
            "restart 1 of 2 (rule oom): "
            "worker pi-worker-1 container worker terminated: OOMKilled (exit 137)",
        ),
        (
            1,
            RESTART,
            "MPIJobRestarting",
            "restart 2 of 2 (rule oom): "
            "worker pi-worker-1 container worker terminated: OOMKilled (exit 137)",
        ),
        (
            2,
            FAIL,
            "ReachedMaxRestarts",
            "reached maxRestarts 2 (rule oom): "
            "worker pi-worker-1 container worker terminated: OOMKilled (exit 137)",
        ),
    ],
)
def test_restarts_count_up_to_max_restarts(
    restart_count: int, action: FailurePolicyAction, reason: str, message: str
) -> None:
    rules = policy({"name": "oom", "action": "RestartJob", "onTerminationReasons": ["OOMKilled"]})
    decision = decide(rules, [failure()], restart_count)
    assert (decision.action, decision.reason, decision.message) == (action, reason, message)
    assert decision.culprit is not None and decision.culprit.pod == "pi-worker-1"


def test_fail_beats_restart_beats_ignore_and_the_earliest_names_it() -> None:
    rules = policy(
        {"name": "evicted", "action": "Ignore", "onPodReasons": ["Evicted"]},
        {"name": "launcher", "action": "FailJob", "targetReplicaTypes": ["Launcher"]},
    )
    launcher = failure("pi-launcher", role="launcher", code=1, reason="Error", container="l")
    early = failure("pi-worker-0", at="2026-11-25T10:00:00Z")
    late = failure("pi-worker-1", at="2026-11-25T10:00:05Z")
    assert decide(rules, [EVICTED, early, late, launcher], 0).action == FAIL
    restart = decide(rules, [EVICTED, early, late], 0)
    assert restart.action == RESTART and restart.culprit == early
    ignore_only = decide(rules, [EVICTED], 0)
    assert ignore_only.action is None
    assert [m.failure for m in ignore_only.ignored] == [EVICTED]
    assert decide(rules, [], 0).action is None


def test_without_max_restarts_the_first_restart_fails_the_job() -> None:
    decision = decide(policy(max_restarts=0), [failure()], 0)
    assert (decision.action, decision.reason) == (FAIL, "ReachedMaxRestarts")


# ------------------------ test culprit ------------------------
#
# The failed pod that is named as the cause of a job's failure (pure), table by table.


Obj = dict[str, Any]


def terminated(name: str, code: int, reason: str, at: str, key: str = "state") -> Obj:
    return {
        "name": name,
        key: {"terminated": {"exitCode": code, "reason": reason, "finishedAt": at}},
    }


def pod(
    name: str,
    role: str = "worker",
    phase: str = "Failed",
    containers: list[Obj] | None = None,
    init: list[Obj] | None = None,
    **status: Any,
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "uid": name + "-uid",
            "labels": {"training.kubeflow.org/job-role": role},
        },
        "status": {
            "phase": phase,
            "containerStatuses": containers or [],
            "initContainerStatuses": init or [],
            **status,
        },
    }


T1, T2 = "2026-11-25T10:00:01Z", "2026-11-25T10:00:02Z"


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            pod("pi-worker-3", containers=[terminated("trainer", 137, "OOMKilled", T1)]),
            "worker pi-worker-3 container trainer terminated: OOMKilled (exit 137)",
        ),
        (
            pod(
                "pi-worker-0",
                containers=[
                    {"name": "sidecar", "state": {"running": {}}},
                    terminated("main", 3, "Error", T1, key="lastState"),
                ],
            ),
            "worker pi-worker-0 container main terminated: Error (exit 3)",
        ),
        (
            pod(
                "pi-worker-1",
                containers=[terminated("main", 1, "Error", T2)],
                init=[terminated("setup", 2, "Error", T1)],
            ),
            "worker pi-worker-1 container setup terminated: Error (exit 2)",
        ),
        (
            pod(
                "pi-worker-0",
                containers=[terminated("worker", 137, "Error", T1)],
                reason="Evicted",
                message="The node was low on resource memory.",
            ),
            "worker pi-worker-0 container worker terminated: Error (exit 137); "
            "pod Evicted: The node was low on resource memory.",
        ),
        (
            pod("pi-launcher-x", role="launcher", reason="DeadlineExceeded"),
            "launcher pi-launcher-x failed: DeadlineExceeded",
        ),
        (pod("pi-worker-2"), "worker pi-worker-2 failed: Failed"),
    ],
)
def test_a_failed_pod_is_described(given: Obj, message: str) -> None:
    found = failed_pod(given)
    assert found is not None and found.message == message


@pytest.mark.parametrize("phase", ["Running", "Succeeded", "Pending", ""])
def test_only_failed_pods_are_failures(phase: str) -> None:
    containers = [terminated("main", 1, "Error", T1)]
    assert failed_pod(pod("p", phase=phase, containers=containers)) is None


def test_the_earliest_failure_is_the_culprit_and_ties_go_to_workers() -> None:
    launcher = pod("pi-launcher", role="launcher", containers=[terminated("l", 1, "Error", T2)])
    worker = pod("pi-worker-1", containers=[terminated("w", 137, "OOMKilled", T1)])
    found = culprit([launcher, pod("pi-worker-0", phase="Running"), worker])
    assert found is not None and found.pod == "pi-worker-1"
    same_time = pod("pi-launcher", role="launcher", containers=[terminated("l", 1, "Error", T1)])
    found = culprit([same_time, worker])
    assert found is not None and found.pod == "pi-worker-1"
    assert culprit([pod("a", phase="Running")]) is None


def test_the_status_field_has_every_part() -> None:
    found = failed_pod(pod("pi-worker-3", containers=[terminated("trainer", 137, "OOMKilled", T1)]))
    assert found is not None
    assert found.status(T2).model_dump(by_alias=True, exclude_none=True) == {
        "pod": "pi-worker-3",
        "replicaType": "Worker",
        "container": "trainer",
        "exitCode": 137,
        "reason": "OOMKilled",
        "message": "worker pi-worker-3 container trainer terminated: OOMKilled (exit 137)",
        "time": T2,
    }
    assert found.uid == "pi-worker-3-uid"
    assert found.conditions == ()
    assert found.terminations == (("trainer", 137, "OOMKilled"),)


# ------------------------ test restart mark ------------------------
#
# What a restart or a failure by the failure policy writes into the status (pure).


T0 = datetime(2026, 11, 25, 3, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 25, 3, 0, 9, tzinfo=UTC)
OOM = FailedPod(
    role="worker",
    pod="pi-worker-1",
    uid="u",
    container="worker",
    exit_code=137,
    reason="OOMKilled",
    pod_reason=None,
    pod_message=None,
    conditions=(),
    terminations=(("worker", 137, "OOMKilled"),),
    finished_at="2026-11-25T02:59:59Z",
)


def restart(n: int) -> Decision:
    return Decision(
        FailurePolicyAction.RESTART_JOB, "MPIJobRestarting", f"restart {n} of 2 (rule oom)", OOM
    )


def test_a_restart_counts_replaces_running_and_names_the_pod() -> None:
    status = JobStatus()
    update_conditions(status, "Running", TRUE, "MPIJobRunning", "running", T0)
    events = mark(status, restart(1), T0)
    assert status.restart_count == 1
    assert [(c.type, c.status, c.reason) for c in status.conditions or []] == [
        ("Restarting", "True", "MPIJobRestarting")
    ]
    assert status.last_failure is not None and status.last_failure.pod == "pi-worker-1"
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "MPIJobRestarting", "restart 1 of 2 (rule oom)")
    ]
    assert status.completion_time is None
    # Restarting again before the job ran: the same condition gets the new message.
    mark(status, restart(2), T1)
    condition = get_condition(status, "Restarting")
    assert status.restart_count == 2
    assert condition is not None and condition.message == "restart 2 of 2 (rule oom)"
    assert condition.last_update_time == "2026-11-25T03:00:09Z"
    assert condition.last_transition_time == "2026-11-25T03:00:00Z"


def test_a_failure_by_the_policy_finishes_the_job() -> None:
    status = JobStatus()
    decision = Decision(FailurePolicyAction.FAIL_JOB, "ReachedMaxRestarts", "reached", OOM)
    events = mark(status, decision, T1)
    assert [(c.type, c.status, c.reason) for c in status.conditions or []] == [
        ("Failed", "True", "ReachedMaxRestarts")
    ]
    assert status.completion_time == "2026-11-25T03:00:09Z"
    assert status.restart_count is None
    assert [e.reason for e in events] == ["ReachedMaxRestarts"]
