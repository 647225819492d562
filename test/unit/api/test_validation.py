"""Validation: the reference operator's rules, with its field paths and messages.

``golden/validation.json`` holds the messages kubeflow/mpi-operator v0.8.2's
validation returns for each job in ``validation_cases.json`` (recorded by
running it on the same jobs); ours must be identical.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mpi_operator.api.field_errors import InvalidObjectError, aggregate
from mpi_operator.api.v2beta1 import MPIJob, parse, set_defaults, validate

HERE = Path(__file__).parent
CASES: dict[str, Any] = json.loads((HERE / "validation_cases.json").read_text())
GOLDEN: dict[str, Any] = json.loads((HERE / "golden" / "validation.json").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_messages_match_the_reference(name: str) -> None:
    errors = validate(set_defaults(MPIJob.from_dict(CASES[name])))
    assert sorted(str(e) for e in errors) == sorted(GOLDEN[name]["errors"] or [])
    assert (aggregate(errors) if errors else "") == GOLDEN[name]["aggregate"]


def test_every_error_names_its_field() -> None:
    errors = validate(set_defaults(MPIJob.from_dict(CASES["everything_wrong"])))
    fields = {e.field for e in errors}
    assert {
        "metadata.name",
        "spec.slotsPerWorker",
        "spec.mpiImplementation",
        "spec.runPolicy.cleanPodPolicy",
        "spec.runPolicy.backoffLimit",
        "spec.mpiReplicaSpecs[Launcher].replicas",
        "spec.mpiReplicaSpecs[Launcher].restartPolicy",
        "spec.mpiReplicaSpecs[Launcher].template.spec.containers",
        "spec.mpiReplicaSpecs[Worker].replicas",
        "spec.mpiReplicaSpecs[Worker].template.spec.containers",
    } <= fields


def test_valid_job_has_no_errors() -> None:
    assert validate(set_defaults(MPIJob.from_dict(CASES["valid"]))) == []


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"spec": {"slotsPerWorker": "many"}}, "spec.slotsPerWorker"),
        (
            {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": [1]}}}},
            "spec.mpiReplicaSpecs[Worker].replicas",
        ),
        ({"spec": {"runPolicy": {"suspend": "perhaps"}}}, "spec.runPolicy.suspend"),
        ({"metadata": "not an object"}, "metadata"),
        (
            {"spec": {"mpiReplicaSpecs": {"Launcher": {"template": "x"}}}},
            "spec.mpiReplicaSpecs[Launcher].template",
        ),
    ],
)
def test_wrongly_typed_json_is_rejected_naming_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse(obj)
    assert [e.field for e in info.value.errors] == [field]
    assert str(info.value).startswith(f"{field}: Invalid value: ")
