"""Mistakes the SDK refuses before any request, each as its documented error: an
unknown field, a value outside an enumeration, an API server that cannot be reached, a
YAML file that is not there. (A missing job needs an API server: test/e2e/test_sdk.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from mpi_operator.api import t9k, v2beta1
from mpi_operator.sdk import (
    InvalidArgumentError,
    InvalidSpecError,
    MPIJobClient,
    SDKConnectionError,
    SDKError,
    T9kMPIJobClient,
)

ROOT = Path(__file__).resolve().parents[3]
PI = ROOT / "examples" / "v2beta1" / "pi" / "pi.yaml"


def _unreachable(kind: type[Any] = MPIJobClient) -> Any:
    """A client of an API server that is not there (nothing listens on port 1)."""
    configuration = Configuration(host="https://127.0.0.1:1")
    configuration.retries = 0
    return kind("ns", api_client=ApiClient(configuration))


def _pi(**spec: Any) -> dict[str, Any]:
    job: dict[str, Any] = {"metadata": {"name": "pi"}, "spec": {"mpiReplicaSpecs": {}}}
    job["spec"].update(spec)
    return job


# (what, the call, the documented error, the field it names or a text of its message)
MISTAKES: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "unknown field in a model",
        lambda: v2beta1.MPIJobSpec(slots_per_workr=2),
        InvalidSpecError,
        "slots_per_workr",
    ),
    (
        "unknown camelCase field in a nested dict",
        lambda: v2beta1.MPIJobSpec(runPolicy={"cleanPodPolicyy": "All"}),
        InvalidSpecError,
        "runPolicy.cleanPodPolicyy",
    ),
    (
        "bad enum in a model",
        lambda: v2beta1.RunPolicy(clean_pod_policy="Sometimes"),
        InvalidSpecError,
        "clean_pod_policy",
    ),
    (
        "bad enum in a T9k-free Kubeflow replica spec",
        lambda: v2beta1.ReplicaSpec(restart_policy="Sometimes"),
        InvalidSpecError,
        "restart_policy",
    ),
    (
        "unknown field in a T9k model",
        lambda: t9k.WorkerSpec(replica=2),
        InvalidSpecError,
        "replica",
    ),
    (
        "unknown field in a dict sent by the client",
        lambda: _unreachable().create(_pi(slotsPerWorkr=2)),
        InvalidSpecError,
        "spec.slotsPerWorkr",
    ),
    (
        "bad enum in a dict sent by the client",
        lambda: _unreachable().create(_pi(runPolicy={"cleanPodPolicy": "Sometimes"})),
        InvalidSpecError,
        "spec.runPolicy.cleanPodPolicy",
    ),
    (
        "unreachable server",
        lambda: _unreachable().create_from_yaml(PI, dry_run=True),
        SDKConnectionError,
        "127.0.0.1:1",
    ),
    (
        "unreachable server, T9k",
        lambda: _unreachable(T9kMPIJobClient).get("pi"),
        SDKConnectionError,
        "127.0.0.1:1",
    ),
    (
        "missing YAML file",
        lambda: _unreachable().create_from_yaml(ROOT / "no-such-job.yaml"),
        InvalidSpecError,
        "no-such-job.yaml",
    ),
    (
        "unknown condition to wait for",
        lambda: _unreachable().wait("pi", "Finished"),
        InvalidArgumentError,
        "Succeeded",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "names"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_each_mistake_raises_its_documented_error(
    call: Callable[[], Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error) as raised:
        call()
    assert names in str(raised.value)
    assert isinstance(raised.value, SDKError)


def test_a_refused_spec_names_its_fields() -> None:
    with pytest.raises(InvalidSpecError) as refused:
        _unreachable().create(_pi(runPolicy={"cleanPodPolicy": "Sometimes"}, slotsPerWorker=1))
    assert refused.value.fields == ["spec.runPolicy.cleanPodPolicy"]
    assert isinstance(refused.value, ValueError)


def test_an_empty_policy_the_crd_takes_is_taken() -> None:
    """The CRD takes "" for restartPolicy and launcherCreationPolicy (the default)."""
    spec = v2beta1.MPIJobSpec(
        launcher_creation_policy="", mpi_replica_specs={"Worker": {"restartPolicy": ""}}
    )
    assert spec.model_dump(by_alias=True, exclude_unset=True, mode="json") == {
        "launcherCreationPolicy": "",
        "mpiReplicaSpecs": {"Worker": {"restartPolicy": ""}},
    }
    with pytest.raises(InvalidSpecError):
        v2beta1.MPIJobSpec(mpi_implementation="")


def test_snake_case_and_camel_case_both_build_a_model() -> None:
    snake = v2beta1.RunPolicy(clean_pod_policy="All", ttl_seconds_after_finished=60)
    camel = v2beta1.RunPolicy(cleanPodPolicy="All", ttlSecondsAfterFinished=60)
    assert snake == camel
    assert snake.clean_pod_policy is v2beta1.CleanPodPolicy.ALL
    assert snake.model_dump(by_alias=True, exclude_unset=True, mode="json") == {
        "cleanPodPolicy": "All",
        "ttlSecondsAfterFinished": 60,
    }


def test_read_from_the_wire_a_model_keeps_what_it_does_not_know() -> None:
    """The operator's path: an object of a newer API server, or one with a bad value,
    parses, keeps everything, and validation (not the parser) names the bad field."""
    wire = {
        "metadata": {"name": "pi", "namespace": "ns"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Sometimes", "newField": 1},
            "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {}}},
        },
    }
    job = v2beta1.MPIJob.from_dict(wire)
    assert job.to_dict()["spec"]["runPolicy"] == {"cleanPodPolicy": "Sometimes", "newField": 1}
    assert "spec.runPolicy.cleanPodPolicy" in [e.field for e in v2beta1.validate(job)]
    with pytest.raises(InvalidSpecError):
        v2beta1.MPIJob.from_dict(wire, strict=True)


def test_validate_defaults_a_copy_first() -> None:
    """An MPIJob as a user writes it, not defaulted: no false errors, and it is left
    as it was."""
    job = v2beta1.MPIJob.from_dict(
        {
            "metadata": {"name": "pi", "namespace": "ns"},
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "template": {"spec": {"containers": [{"name": "l", "image": "i"}]}}
                    },
                    "Worker": {
                        "replicas": 2,
                        "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                    },
                }
            },
        }
    )
    before = job.to_dict()
    assert v2beta1.validate(job) == []
    assert job.to_dict() == before
    t9k_job = t9k.MPIJob.from_dict(
        {
            "metadata": {"name": "pi", "namespace": "ns"},
            "spec": {
                "worker": {
                    "cmd": ["./pi"],
                    "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}},
                }
            },
        }
    )
    assert t9k.validate(t9k_job) == []


def test_the_wheel_ships_py_typed() -> None:
    import tomllib

    sdk = tomllib.loads((ROOT / "sdk" / "pyproject.toml").read_text())
    force = sdk["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert force["../mpi_operator/py.typed"] == "mpi_operator/py.typed"
    assert (ROOT / "mpi_operator" / "py.typed").exists()
