"""The pods' index of a job's workers: only this operator's worker pods are in it."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.controller.kubeflow.context import workers_index

OURS = "mpi-operator"


def pod(labels: dict[str, str], namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": namespace, "labels": labels}}


def labels(role: str = "worker", job: str = "pi", operator: str = OURS) -> dict[str, str]:
    return {
        "training.kubeflow.org/job-role": role,
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/operator-name": operator,
    }


@pytest.mark.parametrize(
    ("obj", "keys"),
    [
        pytest.param(pod(labels()), ["ns/pi"], id="our-worker"),
        pytest.param(pod(labels(), namespace="other"), ["other/pi"], id="namespaced"),
        pytest.param(pod(labels(role="launcher")), [], id="launcher"),
        pytest.param(pod(labels(operator="someone-else")), [], id="other-operator"),
        pytest.param(pod({"training.kubeflow.org/job-role": "worker"}), [], id="no-job-name"),
        pytest.param(pod({}), [], id="no-labels"),
        pytest.param({"metadata": {"name": "p"}}, [], id="no-metadata-labels"),
    ],
)
def test_workers_index(obj: dict[str, Any], keys: list[str]) -> None:
    assert workers_index(obj) == keys
