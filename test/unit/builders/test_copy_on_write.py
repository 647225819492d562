"""The pod builders copy only what they change (issue 46, item 2).

A pod shares every part of its template it does not change with the cached job. That
is only safe if no builder ever changes a shared part: here the job's templates are
made read-only (any write raises), every pod of the parity cases and of the T9k run
modes is built from them, and the result must equal the pod built from the ordinary
job. And a pod must not copy what it keeps: its env entries and volumes are the
job's own objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.t9k import MPIJob as T9kJob
from mpi_operator.api.t9k import parse as t9k_parse
from mpi_operator.api.t9k import set_defaults as t9k_defaults
from mpi_operator.api.v2beta1 import MPIJob, ReplicaType, set_defaults
from mpi_operator.builders.kubeflow.worker import new_worker, worker_replicas
from mpi_operator.builders.t9k.pods import new_launcher_pod, new_worker_pod

HERE = Path(__file__).parent
#: The parity cases with workers.
CASES = sorted(
    p.stem
    for p in (HERE / "cases").glob("*.json")
    if "Worker" in (json.loads(p.read_text())["job"]["spec"].get("mpiReplicaSpecs") or {})
)
GANGS = [
    None,
    GangScheduling.volcano(),
    GangScheduling.scheduler_plugins("scheduler-plugins-scheduler"),
]


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise AssertionError("a builder changed a part of the job's template")


class ReadOnlyDict(dict[str, Any]):
    __setitem__ = __delitem__ = setdefault = pop = popitem = update = clear = _refuse
    __ior__ = _refuse


class ReadOnlyList(list[Any]):
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _refuse
    sort = reverse = __iadd__ = __imul__ = _refuse


def read_only(value: Any) -> Any:
    if isinstance(value, dict):
        return ReadOnlyDict({k: read_only(v) for k, v in value.items()})
    if isinstance(value, list):
        return ReadOnlyList(read_only(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """The same data as built-in dicts and lists, to compare with ==, types aside."""
    return json.loads(json.dumps(value))


def test_read_only_refuses_writes() -> None:
    frozen = read_only({"a": [{"b": 1}]})
    with pytest.raises(AssertionError):
        frozen["a"][0]["b"] = 2
    with pytest.raises(AssertionError):
        frozen["a"].append(3)


@pytest.mark.parametrize("case_name", CASES)
def test_kubeflow_workers_leave_the_template_untouched(case_name: str) -> None:
    case = json.loads((HERE / "cases" / f"{case_name}.json").read_text())
    job = set_defaults(MPIJob.from_dict(case["job"]))
    spec = job.replica_spec(ReplicaType.WORKER)
    assert spec is not None
    frozen = set_defaults(MPIJob.from_dict(case["job"]))
    frozen_spec = frozen.replica_spec(ReplicaType.WORKER)
    assert frozen_spec is not None
    frozen_spec.template = read_only(spec.template)
    for gang in GANGS:
        for i in range(min(worker_replicas(job), 3)):
            assert plain(new_worker(frozen, i, gang)) == plain(new_worker(job, i, gang))


def test_kubeflow_worker_shares_what_it_does_not_change() -> None:
    case = json.loads((HERE / "cases" / "template_with_extras.json").read_text())
    job = set_defaults(MPIJob.from_dict(case["job"]))
    spec = job.replica_spec(ReplicaType.WORKER)
    assert spec is not None
    spec.template["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    spec.template["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    template = spec.template["spec"]
    pod = new_worker(job, 0, GangScheduling.volcano())
    assert pod["spec"]["containers"][0]["env"][0] is template["containers"][0]["env"][0]
    assert pod["spec"]["volumes"][0] is template["volumes"][0]
    # ... while what it changes is its own.
    assert pod["spec"] is not template
    assert pod["spec"]["containers"][0] is not template["containers"][0]


def _t9k_job(**spec: Any) -> T9kJob:
    container = {
        "name": "mpi-worker",
        "image": "mpi-pi",
        "command": ["ignored"],
        "env": [{"name": "A", "value": "1"}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "resources": {
            "limits": {"nvidia.com/gpu": 4, "cpu": "2"},
            "requests": {"nvidia.com/gpu": 4},
        },
    }
    obj = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "worker": {
                "replicas": 2,
                "cmd": ["./pi"],
                "template": {
                    "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                    "spec": {
                        "hostNetwork": True,
                        "volumes": [{"name": "data", "emptyDir": {}}],
                        "initContainers": [{"name": "prep", "image": "prep"}],
                        "containers": [{"name": "sidecar", "image": "side"}, container],
                    },
                },
            },
            **spec,
        },
    }
    return t9k_defaults(t9k_parse(obj))


T9K_MODES = {
    "normal": {},
    "scheduler": {"scheduler": {"t9kScheduler": {"queue": "q", "priority": 1}}},
    "debug": {"runMode": {"debug": {"enabled": True, "replicaSpecs": [{"type": "launcher"}]}}},
    "pause": {
        "runMode": {
            "pause": {
                "enabled": False,
                "resumeSpecs": [{"type": "worker", "command": ["w"], "args": ["x"]}],
            }
        }
    },
}


@pytest.mark.parametrize("mode", sorted(T9K_MODES))
@pytest.mark.parametrize("resumed", [False, True])
def test_t9k_pods_leave_the_template_untouched(mode: str, resumed: bool) -> None:
    job, frozen = _t9k_job(**T9K_MODES[mode]), _t9k_job(**T9K_MODES[mode])
    frozen.worker.template = read_only(job.worker.template)
    assert plain(new_launcher_pod(frozen, resumed=resumed)) == plain(
        new_launcher_pod(job, resumed=resumed)
    )
    assert plain(new_worker_pod(frozen, 1, resumed=resumed)) == plain(
        new_worker_pod(job, 1, resumed=resumed)
    )


def test_t9k_pods_share_what_they_do_not_change() -> None:
    job = _t9k_job()
    template = job.worker.template["spec"]
    worker, launcher = new_worker_pod(job, 0), new_launcher_pod(job)
    for pod in (worker, launcher):
        assert pod["spec"]["volumes"][0] is template["volumes"][0]
        mpi = pod["spec"]["containers"][-1]
        assert mpi["env"][0] is template["containers"][1]["env"][0]
    assert worker["spec"]["containers"][0] is template["containers"][0]  # the sidecar
    # The launcher's GPUs are stripped from its own copy of the resources.
    assert launcher["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "2"}}
    assert template["containers"][1]["resources"]["requests"] == {"nvidia.com/gpu": 4}
