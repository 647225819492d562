"""The failure policy's decisions (pure), table by table."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import FailurePolicy, FailurePolicyAction
from mpi_operator.controller.kubeflow.policy import FailedPod, decide, match

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
