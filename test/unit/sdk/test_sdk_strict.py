"""Writes ask the API server for strict field validation (``fieldValidation=Strict``),
so a typo where the models do not look (a pod template) is refused, not dropped; the
refusal is an InvalidSpecError naming every field. On a loopback fake API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import FakeApi, Request
from kubernetes.client import ApiClient, Configuration

from mpi_operator.sdk import InvalidSpecError, MPIJobClient, NotFoundError, SDKError

TYPO = "spec.mpiReplicaSpecs.Worker.template.spec.containers[0].imagee"


def _client(api: FakeApi) -> MPIJobClient:
    configuration = Configuration(host=api.url)
    configuration.retries = 0
    return MPIJobClient("ns", api_client=ApiClient(configuration))


def _job() -> dict[str, Any]:
    container = {"name": "w", "image": "i", "imagee": "typo"}
    return {
        "metadata": {"name": "pi"},
        "spec": {
            "mpiReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [container]}}}}
        },
    }


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _echo(request: Request) -> tuple[int, Any]:
    body = request.body if request.method == "POST" else {**_job(), "kind": "MPIJob"}
    return (201 if request.method == "POST" else 200), body


def test_every_write_asks_for_strict_field_validation(fake_api: FakeApi) -> None:
    fake_api.answer = _echo
    client = _client(fake_api)
    client.create(_job())
    client.suspend("pi")
    client.resume("pi")
    writes = [r for r in fake_api.requests if r.method in ("POST", "PUT", "PATCH")]
    assert [r.method for r in writes] == ["POST", "PATCH", "PATCH"]
    assert all(r.query.get("fieldValidation") == ["Strict"] for r in writes), writes
    reads = [r for r in fake_api.requests if r.method == "GET"]
    assert all("fieldValidation" not in r.query for r in reads)


# The API server's answers, as a kube-apiserver of test/e2e's cluster gave them.
CREATE = _status(
    400,
    "BadRequest",
    'MPIJob in version "v2beta1" cannot be handled as a MPIJob: strict decoding error: '
    f'unknown field "{TYPO}", unknown field "spec.runPolicy.cleanPodPolicyy"',
)
MERGE_PATCH = _status(
    422,
    "Invalid",
    ' "" is invalid: patch: Invalid value: "{\\"spec\\":{\\"x\\":\\"unknown field \\"}}": '
    f'strict decoding error: unknown field "{TYPO}", unknown field "spec.runPolicy.suspendd"',
)
APPLY = _status(
    422,
    "Invalid",
    f".{TYPO}: field not declared in schema",
)


@pytest.mark.parametrize(
    ("answer", "fields"),
    [
        (CREATE, [TYPO, "spec.runPolicy.cleanPodPolicyy"]),
        (MERGE_PATCH, [TYPO, "spec.runPolicy.suspendd"]),
        (APPLY, [TYPO]),
    ],
    ids=["create", "merge patch", "field not declared"],
)
def test_a_strict_refusal_is_an_invalid_spec_error_naming_every_field(
    fake_api: FakeApi, answer: dict[str, Any], fields: list[str]
) -> None:
    fake_api.answer = lambda request: (answer["code"], answer)
    with pytest.raises(InvalidSpecError) as refused:
        _client(fake_api).create(_job())
    assert refused.value.fields == fields
    assert isinstance(refused.value, SDKError)
    assert all(f in str(refused.value) for f in fields)


def test_other_error_answers_keep_their_kind(fake_api: FakeApi) -> None:
    fake_api.answer = lambda request: (404, _status(404, "NotFound", 'mpijobs "pi" not found'))
    with pytest.raises(NotFoundError):
        _client(fake_api).suspend("pi")
    assert json.dumps(CREATE)  # the scripted answers are JSON
