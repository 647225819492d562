"""Models built in Python: every way in raises the SDK's InvalidSpecError (an SDKError
and a ValueError) naming each field, an unknown one by its own path; a misspelt
replica type is refused. The wire path the operator uses is left as it was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration
from pydantic import ValidationError

from mpi_operator import sdk
from mpi_operator.api import v2beta1 as api_v2beta1
from mpi_operator.sdk import InvalidSpecError, MPIJobClient, SDKError, t9k, v2beta1


def _offline() -> MPIJobClient:
    configuration = Configuration(host="https://127.0.0.1:1")
    configuration.retries = 0
    return MPIJobClient("ns", api_client=ApiClient(configuration))


def _pi(specs: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pi"},
        "spec": {"mpiReplicaSpecs": specs if specs is not None else {}, **spec},
    }


BAD_JOB: dict[str, Any] = {"metadata": {"name": "pi"}, "spec": {"slotsPerWorkr": 2}}

# (what, the call, the fields the error names)
CONSTRUCTIONS: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("MPIJob(**bad)", lambda: v2beta1.MPIJob(**BAD_JOB), ["spec.slotsPerWorkr"]),
    ("a spec model", lambda: v2beta1.MPIJobSpec(slots_per_workr=2), ["slots_per_workr"]),
    (
        "a bad enum",
        lambda: v2beta1.RunPolicy(clean_pod_policy="Sometimes"),
        ["clean_pod_policy"],
    ),
    ("a wrong type", lambda: v2beta1.ReplicaSpec(replicas="two"), ["replicas"]),
    ("a T9k model", lambda: t9k.WorkerSpec(replica=2), ["replica"]),
    (
        "from_dict strict",
        lambda: v2beta1.MPIJob.from_dict(BAD_JOB, strict=True),
        ["spec.slotsPerWorkr"],
    ),
    ("the sdk module's model", lambda: sdk.v2beta1.MPIJob(**BAD_JOB), ["spec.slotsPerWorkr"]),
]


@pytest.mark.parametrize(
    ("call", "fields"), [c[1:] for c in CONSTRUCTIONS], ids=[c[0] for c in CONSTRUCTIONS]
)
def test_building_a_model_raises_an_sdk_error(call: Callable[[], Any], fields: list[str]) -> None:
    with pytest.raises(SDKError) as raised:
        call()
    assert isinstance(raised.value, InvalidSpecError)
    assert isinstance(raised.value, ValueError)
    assert raised.value.fields == fields
    assert isinstance(raised.value.__cause__, ValidationError)


def test_the_wire_path_is_the_operators_as_before() -> None:
    """Read from the wire (the operator's path), an unknown field is kept and a wrong
    type is still pydantic's ValidationError, which the operator's parse() reports."""
    job = api_v2beta1.MPIJob.from_dict(BAD_JOB)
    assert job.to_dict()["spec"]["slotsPerWorkr"] == 2
    with pytest.raises(ValidationError):
        api_v2beta1.MPIJob.from_dict({"metadata": {}, "spec": {"slotsPerWorker": "two"}})


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"runPolicy": {"cleanPodPolicyy": "All"}}, "spec.runPolicy.cleanPodPolicyy"),
        ({"slotsPerWorkr": 1}, "spec.slotsPerWorkr"),
        (
            {"runPolicy": {"schedulingPolicy": {"minAvailabe": 1}}},
            "spec.runPolicy.schedulingPolicy.minAvailabe",
        ),
    ],
)
def test_an_unknown_field_is_named_by_its_own_path(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpecError) as refused:
        _offline().create(_pi(**spec))
    assert refused.value.fields == [field]


def test_each_unknown_field_is_named() -> None:
    with pytest.raises(InvalidSpecError) as refused:
        _offline().create(_pi(runPolicy={"suspendd": True, "backofLimit": 1}))
    assert refused.value.fields == ["spec.runPolicy.backofLimit", "spec.runPolicy.suspendd"]


WORKER = {"replicas": 1, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}}


def test_a_misspelt_replica_type_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(InvalidSpecError) as refused:
        v2beta1.MPIJobSpec(mpi_replica_specs={"Launcher": WORKER, "Workr": WORKER})
    assert refused.value.fields == ["mpi_replica_specs.Workr"]
    assert "'Workr'; one of Launcher, Worker" in str(refused.value)
    with pytest.raises(InvalidSpecError) as sent:
        _offline().create(_pi({"Launcher": WORKER, "Workr": WORKER}))
    assert sent.value.fields == ["spec.mpiReplicaSpecs.Workr"]
    # Both real types are taken, in either naming.
    v2beta1.MPIJobSpec(mpiReplicaSpecs={"Launcher": WORKER, "Worker": WORKER})


def test_validate_names_a_misspelt_replica_type() -> None:
    job = v2beta1.MPIJob.from_dict(
        _pi({"Launcher": WORKER, "Workr": WORKER}, slotsPerWorker=1), strict=False
    )
    errors = [e for e in v2beta1.validate(job) if e.field == "spec.mpiReplicaSpecs[Workr]"]
    assert len(errors) == 1
    assert '"Workr": supported values: "Launcher", "Worker"' in str(errors[0])
    # The operator's own path (validate_defaulted) keeps the reference's rules.
    defaulted = v2beta1.set_defaults(job.model_copy(deep=True))
    assert all("Workr" not in e.field for e in v2beta1.validate_defaulted(defaulted))


def test_the_mistakes_snippet_of_the_sdk_page_does_what_it_says() -> None:
    """docs/sdk/index.md's model snippet: each line under an ``# InvalidSpecError``
    comment raises it with the comment's last words in its message; the others run."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "sdk" / "index.md").read_text()
    block = page.split("from mpi_operator.sdk import v2beta1\n", 1)[1].split("```", 1)[0]
    scope: dict[str, Any] = {"v2beta1": v2beta1}
    expected = ""
    checked = 0
    for line in block.splitlines():
        if line.startswith("# "):
            expected = line.removeprefix("# ")
            continue
        if not line.strip():
            continue
        if expected.startswith("InvalidSpecError"):
            with pytest.raises(InvalidSpecError) as refused:
                exec(line, scope)
            assert expected.rsplit("... ", 1)[-1] in str(refused.value), line
            checked += 1
        else:
            exec(line, scope)
    assert checked == 3
