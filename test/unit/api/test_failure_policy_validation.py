"""The operator's validation of spec.runPolicy.failurePolicy (ours), table by table."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.v2beta1 import MPIJob, set_defaults, validate

P = "spec.runPolicy.failurePolicy"


def job(policy: dict[str, Any]) -> MPIJob:
    return set_defaults(
        MPIJob.from_dict(
            {
                "metadata": {"name": "pi", "namespace": "ns"},
                "spec": {
                    "runPolicy": {"failurePolicy": policy},
                    "mpiReplicaSpecs": {
                        "Launcher": {"template": {"spec": {"containers": [{"name": "l"}]}}},
                        "Worker": {
                            "replicas": 2,
                            "template": {"spec": {"containers": [{"name": "w"}]}},
                        },
                    },
                },
            }
        )
    )


@pytest.mark.parametrize(
    ("policy", "errors"),
    [
        ({}, []),
        (
            {
                "maxRestarts": 3,
                "rules": [
                    {
                        "name": "oom",
                        "action": "RestartJob",
                        "targetReplicaTypes": ["Worker"],
                        "onExitCodes": {"containerName": "w", "operator": "NotIn", "values": [0]},
                        "onTerminationReasons": ["OOMKilled"],
                        "onPodReasons": ["Evicted"],
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    },
                    {"action": "Ignore"},
                    {"action": "FailJob"},
                ],
            },
            [],
        ),
        (
            {"maxRestarts": -1},
            [f"{P}.maxRestarts: Invalid value: -1: must be greater than or equal to 0"],
        ),
        ({"rules": [{}]}, [f"{P}.rules[0].action: Required value: must have an action"]),
        (
            {"rules": [{"action": "Retry"}]},
            [
                f'{P}.rules[0].action: Unsupported value: "Retry": supported values: '
                '"FailJob", "Ignore", "RestartFailed", "RestartJob"'
            ],
        ),
        (
            {"rules": [{"action": "FailJob", "targetReplicaTypes": ["Chief"]}]},
            [
                f'{P}.rules[0].targetReplicaTypes[0]: Unsupported value: "Chief": '
                'supported values: "Launcher", "Worker"'
            ],
        ),
        (
            {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "Is", "values": []}}]},
            [
                f'{P}.rules[0].onExitCodes.operator: Unsupported value: "Is": '
                'supported values: "In", "NotIn"',
                f"{P}.rules[0].onExitCodes.values: Required value: "
                "must have at least one exit code",
            ],
        ),
        (
            {"rules": [{"action": "FailJob", "onPodConditions": [{"status": "Maybe"}]}]},
            [
                f"{P}.rules[0].onPodConditions[0].type: Required value: "
                "must have a pod condition type",
                f'{P}.rules[0].onPodConditions[0].status: Unsupported value: "Maybe": '
                'supported values: "False", "True", "Unknown"',
            ],
        ),
        (
            {"rules": [{"name": "a", "action": "FailJob"}, {"name": "a", "action": "Ignore"}]},
            [f'{P}.rules[1].name: Invalid value: "a": must be unique'],
        ),
        (
            {"rules": [{"action": "FailJob", "onPodReasons": [""]}]},
            [f"{P}.rules[0].onPodReasons[0]: Required value: must not be empty"],
        ),
        (
            {"rules": [{"action": "Ignore"}] * 21},
            [f"{P}.rules: Invalid value: 21: must have at most 20 items"],
        ),
    ],
)
def test_failure_policy_errors_name_the_field(policy: dict[str, Any], errors: list[str]) -> None:
    assert [str(e) for e in validate(job(policy))] == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("MPIJob", []),
        ("Launcher", []),
        (
            "Everything",
            [
                'spec.runPolicy.ttlSecondsAfterFinishedPolicy: Unsupported value: "Everything": '
                'supported values: "Launcher", "MPIJob"'
            ],
        ),
    ],
)
def test_ttl_policy_errors_name_the_field(value: str, errors: list[str]) -> None:
    given = job({})
    given.spec.run_policy.ttl_seconds_after_finished_policy = value
    assert [str(e) for e in validate(given)] == errors


def test_a_negative_workers_ready_timeout_names_the_field() -> None:
    given = job({})
    given.spec.run_policy.workers_ready_timeout_seconds = -2
    assert [str(e) for e in validate(given)] == [
        "spec.runPolicy.workersReadyTimeoutSeconds: Invalid value: -2: "
        "must be greater than or equal to 0"
    ]
