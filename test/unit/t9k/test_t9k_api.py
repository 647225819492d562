"""T9k MPIJob models, defaulting and validation."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.field_errors import InvalidObjectError
from mpi_operator.api.t9k import MPIJob, parse, set_defaults, validate


def job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "worker": {
            "replicas": 2,
            "cmd": ["python", "train.py"],
            "template": {"spec": {"containers": [{"name": "mpi-worker", "image": "img"}]}},
        }
    }
    base.update(spec)
    return {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": base,
    }


def defaulted(obj: dict[str, Any]) -> MPIJob:
    return set_defaults(parse(obj))


def test_round_trip_keeps_unknown_fields_and_aliases() -> None:
    obj = job(mca={"btl": "^openib"}, mpiHome="/opt/mpi", future={"x": 1})
    obj["spec"]["worker"]["extraMPIArgs"] = ["-N", "1"]
    parsed = parse(obj)
    assert parsed.to_dict() == obj
    assert parsed.worker.extra_mpi_args == ["-N", "1"]
    assert parsed.spec.mpi_home == "/opt/mpi"


def test_defaults() -> None:
    obj = job()
    del obj["spec"]["worker"]["replicas"]
    d = defaulted(obj).to_dict()["spec"]
    assert d["worker"]["replicas"] == 1
    assert d["ssh"] == {"sshAuthMountPath": "/root/.ssh", "sshdPath": "/usr/sbin/sshd"}
    assert d["runPolicy"] == {"cleanUpWorkers": "none"}


def test_scheduler_priority_defaults_to_zero() -> None:
    d = defaulted(job(scheduler={"t9kScheduler": {"queue": "q"}}))
    assert d.t9k_scheduler is not None and d.t9k_scheduler.priority == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "all"),
        (False, "none"),
        ("all", "all"),
        ("ALL", "all"),
        ("Unfinished", "unfinished"),
        ("none", "none"),
        (None, "none"),
    ],
)
def test_clean_up_workers_both_forms(value: Any, expected: str) -> None:
    obj = job(runPolicy={} if value is None else {"cleanUpWorkers": value})
    d = defaulted(obj)
    assert d.spec.run_policy.clean_up_workers == expected
    assert validate(d) == []


@pytest.mark.parametrize("key", ["enabled", "enable"])
def test_run_mode_switch_spellings(key: str) -> None:
    d = defaulted(job(runMode={"debug": {key: True}, "pause": {key: True}}))
    assert d.debug is not None and d.paused
    off = defaulted(job(runMode={"debug": {key: False}, "pause": {key: False}}))
    assert off.debug is None and not off.paused


def test_enabled_wins_over_enable() -> None:
    d = defaulted(job(runMode={"pause": {"enabled": False, "enable": True}}))
    assert not d.paused


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate(defaulted(obj))]


def test_valid_job_has_no_errors() -> None:
    assert messages(job()) == []


VALIDATION_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "bad clean up",
        job(runPolicy={"cleanUpWorkers": "Some"}),
        [
            'spec.runPolicy.cleanUpWorkers: Unsupported value: "some": '
            'supported values: "all", "none", "unfinished"'
        ],
    ),
    (
        "no cmd, zero replicas",
        job(worker={"replicas": 0, "template": {"spec": {"containers": [{"name": "c"}]}}}),
        [
            "spec.worker.replicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.worker.cmd: Required value: must give the command mpirun runs",
        ],
    ),
    (
        "no containers",
        job(worker={"cmd": ["x"], "template": {}}),
        [
            "spec.worker.template.spec.containers: Required value: "
            "must define at least one container"
        ],
    ),
    (
        "scheduler",
        job(scheduler={"t9kScheduler": {"priority": 101}}),
        [
            "spec.scheduler.t9kScheduler.queue: Required value: must name the queue",
            "spec.scheduler.t9kScheduler.priority: Invalid value: 101: must be between 0 and 100",
        ],
    ),
    (
        "run mode types",
        job(
            runMode={
                "debug": {"enabled": True, "replicaSpecs": [{"type": "master"}]},
                "pause": {
                    "enabled": True,
                    "resumeSpecs": [{"type": "worker"}, {"type": "worker"}],
                },
            }
        ),
        [
            'spec.runMode.debug.replicaSpecs[0].type: Unsupported value: "master": '
            'supported values: "launcher", "worker"',
            'spec.runMode.pause.resumeSpecs[1].type: Invalid value: "worker": '
            "duplicate replica type",
        ],
    ),
    (
        "relative sshd path",
        job(ssh={"sshdPath": "sshd"}),
        ['spec.ssh.sshdPath: Invalid value: "sshd": must be an absolute path'],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
def test_validation(obj: dict[str, Any], expected: list[str]) -> None:
    assert messages(obj) == expected


def test_name_too_long_for_worker_hostnames() -> None:
    obj = job()
    obj["metadata"]["name"] = "a" * 60
    [error] = messages(obj)
    assert error.startswith('metadata.name: Invalid value: "' + "a" * 60)
    assert "must be no more than 63 characters" in error


def test_parse_errors_name_the_field() -> None:
    with pytest.raises(InvalidObjectError) as info:
        parse(job(runPolicy={"cleanUpWorkers": 3}, worker={"replicas": "many"}))
    text = str(info.value)
    assert "spec.runPolicy.cleanUpWorkers: Invalid value: 3" in text
    assert 'spec.worker.replicas: Invalid value: "many"' in text


def test_example_is_valid_and_gives_the_documented_mpirun_line() -> None:
    from pathlib import Path

    import yaml

    from mpi_operator.builders.t9k.pods import mpirun_command

    path = Path(__file__).resolve().parents[3] / "examples" / "t9k" / "pi.yaml"
    example = set_defaults(parse(yaml.safe_load(path.read_text())))
    assert validate(example) == []
    assert mpirun_command(example) == [
        "/usr/bin/mpirun",
        "--prefix",
        "/usr",
        "--hostfile",
        "/etc/mpi/hostfile",
        "--mca",
        "btl",
        "^openib",
        "--mca",
        "orte_keep_fqdn_hostnames",
        "true",
        "--allow-run-as-root",
        "-np",
        "2",
        "/home/mpiuser/pi",
    ]
