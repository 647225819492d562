"""The SDK's pure parts: API errors by kind, conditions by kind, status summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from mpi_operator.api import t9k, v2beta1
from mpi_operator.sdk import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    FieldCause,
    ForbiddenError,
    InvalidError,
    MPIJobClient,
    NotFoundError,
    T9kMPIJobClient,
    state,
)
from mpi_operator.sdk._config import connect
from mpi_operator.sdk.errors import SDKError, from_api_exception
from mpi_operator.sdk.kinds import KUBEFLOW, T9K


def _status(code: int, reason: str, message: str, **details: Any) -> str:
    body = {"kind": "Status", "status": "Failure", "code": code, "reason": reason}
    return json.dumps({**body, "message": message, "details": details})


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFoundError),
        (403, "Forbidden", ForbiddenError),
        (409, "AlreadyExists", AlreadyExistsError),
        (409, "Conflict", ConflictError),
        (422, "Invalid", InvalidError),
        (500, "InternalError", ApiError),
    ],
)
def test_error_kind_follows_the_status(code: int, reason: str, expected: type) -> None:
    error = from_api_exception(code, "HTTP reason", _status(code, reason, "the message"))
    assert type(error) is expected
    assert (error.status, error.reason, error.message) == (code, reason, "the message")
    assert str(error) == f"{code} {reason}: the message"


def test_invalid_names_the_fields() -> None:
    causes = [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 2", "field": "spec.a[X].b"},
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.c"},
    ]
    error = from_api_exception(
        422, "Unprocessable Entity", _status(422, "Invalid", "m", causes=causes)
    )
    assert isinstance(error, InvalidError)
    assert error.fields == ["spec.a[X].b", "spec.c"]
    assert error.causes[0] == FieldCause("spec.a[X].b", "Invalid value: 2", "FieldValueInvalid")


def test_an_answer_without_a_status_keeps_the_http_reason_and_text() -> None:
    error = from_api_exception(502, "Bad Gateway", "upstream went away\n")
    assert (type(error), error.reason, error.message) == (
        ApiError,
        "Bad Gateway",
        "upstream went away",
    )
    assert from_api_exception(404, "Not Found", None).message == "Not Found"


def _v2(conditions: list[tuple[str, str]], **status: Any) -> v2beta1.MPIJob:
    return v2beta1.MPIJob.from_dict(
        {
            "metadata": {"name": "pi", "namespace": "ns"},
            "spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}},
            "status": {
                "conditions": [{"type": t, "status": s} for t, s in conditions],
                **status,
            },
        }
    )


def test_kubeflow_conditions() -> None:
    job = _v2(
        [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
        replicaStatuses={"Launcher": {"succeeded": 1}, "Worker": {}},
    )
    assert KUBEFLOW.reached(job, "Succeeded") and KUBEFLOW.reached(job, "Created")
    assert not KUBEFLOW.reached(job, "Running") and not KUBEFLOW.failed(job)
    assert state(job) == "Succeeded"
    assert KUBEFLOW.summary(job) == "Succeeded: launcher succeeded=1, workers 0 of 2"
    failed = _v2([("Failed", "True")], lastFailure={"message": "worker pi-worker-1 OOMKilled"})
    assert KUBEFLOW.failed(failed)
    assert KUBEFLOW.summary(failed).endswith("; last failure: worker pi-worker-1 OOMKilled")
    assert KUBEFLOW.summary(v2beta1.MPIJob()) == "Pending: launcher -, workers - of 1"


def test_unknown_condition_names_the_choices() -> None:
    with pytest.raises(ValueError, match="has no condition 'Done'; one of Created, Running"):
        KUBEFLOW.check_condition("Done")
    assert KUBEFLOW.check_condition(v2beta1.ConditionType.RUNNING) == "Running"
    assert T9K.check_condition("Completed") == "Completed"
    assert T9K.check_condition("Paused") == "Paused"


def test_t9k_phase_or_condition() -> None:
    job = t9k.MPIJob.from_dict(
        {
            "metadata": {"name": "pi"},
            "status": {
                "phase": "Succeeded",
                "conditions": [{"type": "Completed", "status": "True"}],
                "aggregate": {"succeeded": 3},
            },
        }
    )
    assert T9K.reached(job, "Succeeded") and T9K.reached(job, "Completed")
    assert not T9K.reached(job, "Running") and not T9K.failed(job)
    assert T9K.summary(job) == "Succeeded: pods succeeded 3"
    assert T9K.summary(t9k.MPIJob()) == "Pending"


def test_launcher_selectors() -> None:
    assert KUBEFLOW.launcher_selector("pi") == (
        "training.kubeflow.org/job-name=pi,training.kubeflow.org/job-role=launcher"
    )
    assert T9K.launcher_selector("pi") == (
        "batch.tensorstack.dev/job-name=pi,batch.tensorstack.dev/replica-type=launcher"
    )


def _offline(kind: type[MPIJobClient] | type[T9kMPIJobClient]) -> Any:
    """A client whose requests would go nowhere: only checks before any request run."""
    return kind("ns", api_client=ApiClient())


def test_a_client_refuses_the_other_kind_before_any_request(tmp_path: Path) -> None:
    kubeflow, t9k_client = _offline(MPIJobClient), _offline(T9kMPIJobClient)
    with pytest.raises(
        ValueError, match=r"creates kubeflow\.org/v2beta1 MPIJob, not a mpi_operator"
    ):
        kubeflow.create(t9k.MPIJob(metadata={"name": "x"}))
    with pytest.raises(ValueError, match=r"not kubeflow\.org/v2beta1 MPIJob"):
        t9k_client.create({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob"})
    two = tmp_path / "two.yaml"
    two.write_text("kind: MPIJob\n---\nkind: MPIJob\n")
    with pytest.raises(ValueError, match="expected one MPIJob document, got 2"):
        kubeflow.create_from_yaml(two)


def test_a_model_is_sent_in_its_wire_form() -> None:
    client = _offline(MPIJobClient)
    job = v2beta1.MPIJob(
        metadata={"name": "pi"},
        spec=v2beta1.MPIJobSpec(slots_per_worker=2, run_launcher_as_worker=True),
    )
    assert client._body(job) == {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {"slotsPerWorker": 2, "runLauncherAsWorker": True},
    }


def test_a_broken_kubeconfig_named_by_the_environment_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$KUBECONFIG names a kubeconfig as an argument would: it must load, and the
    error names it (no silent fall-back to the in-cluster config)."""
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("not: [a kubeconfig\n")
    monkeypatch.setenv("KUBECONFIG", str(broken))
    with pytest.raises(SDKError, match=str(broken)):
        connect(None, None)
