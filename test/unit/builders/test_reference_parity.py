"""Builders against the reference operator's own output.

Each file in ``cases/`` is an MPIJob (plus the cluster domain, the running
workers and the PriorityClasses of the cluster). ``golden/`` holds what
kubeflow/mpi-operator v0.8.2's builder functions return for the same input,
recorded by running those functions on the same input. Our builders must
produce the same objects.

Two normalisations apply to both sides: empty values are dropped (Go's
encoder writes ``creationTimestamp: null``, ``resources: {}``, ``status: {}``
and ``name: ""`` where we omit them), and resource quantities are compared by
value (Go re-encodes a template's quantities canonically; the API server does
the same to ours on write).

One difference is deliberate (a bug fix, in README's differences): an OpenMPI
launcher also carries PRRTE's names for the reference's four ``OMPI_MCA_``
variables, right after them, with the same values (Open MPI 5 reads only those),
then ``PRTE_MCA_prte_do_not_resolve=false``.
``_with_prrte_env`` adds them to the reference's output; nothing else differs.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from mpi_operator.api.quantity import parse_quantity
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1 import MPIJob, set_defaults
from mpi_operator.builders.kubeflow.config import new_config_map
from mpi_operator.builders.kubeflow.launcher import new_launcher_job
from mpi_operator.builders.kubeflow.podgroup import new_pod_group
from mpi_operator.builders.kubeflow.secret import new_ssh_auth_secret
from mpi_operator.builders.kubeflow.service import new_job_service
from mpi_operator.builders.kubeflow.worker import new_worker, worker_replicas

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "cases").glob("*.json"))

GANGS = {
    "plain": None,
    "volcano": GangScheduling.volcano(),
    "schedulerPlugins": GangScheduling.scheduler_plugins("scheduler-plugins-scheduler"),
}


def _normalise(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            n = _normalise(v, k)
            if n not in (None, {}, [], ""):
                out[k] = n
        if key in ("requests", "limits", "minResources"):
            return {k: parse_quantity(str(v)) for k, v in out.items()}
        return out
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value


def _ours(case: dict[str, Any]) -> dict[str, Any]:
    job = set_defaults(MPIJob.from_dict(case["job"]))
    domain = case.get("clusterDomain", "")
    priorities = case.get("priorityClasses") or {}
    result: dict[str, Any] = {"defaulted": job.to_dict()}
    for label, gang in GANGS.items():
        launcher = new_launcher_job(job, gang)
        built: dict[str, Any] = {
            "workers": [new_worker(job, i, gang) for i in range(worker_replicas(job))],
            "launcher": launcher.job,
            "events": [f"Warning {w.reason} {w.message}" for w in launcher.warnings],
        }
        if gang is not None:
            built["podGroup"] = new_pod_group(job, gang, priorities)
        result[label] = built
    running = [
        {"metadata": {"name": n, "namespace": job.namespace}} for n in case.get("runningPods") or []
    ]
    result["configMap"] = new_config_map(job, worker_replicas(job), running, domain)
    result["service"] = new_job_service(job)
    result["secret"] = new_ssh_auth_secret(job)
    return result


#: The reference's Open MPI 4 (ORTE) variables and their PRRTE names.
PRRTE_NAMES = {
    "OMPI_MCA_orte_keep_fqdn_hostnames": "PRTE_MCA_prte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_default_hostfile": "PRTE_MCA_prte_default_hostfile",
    "OMPI_MCA_plm_rsh_args": "PRTE_MCA_plm_ssh_args",
    "OMPI_MCA_orte_set_default_slots": "PRTE_MCA_prte_set_default_slots",
}


#: ORTE resolved hostfile names to find the launcher's own; PRRTE must be told to.
PRRTE_RESOLVE = {"name": "PRTE_MCA_prte_do_not_resolve", "value": "false"}


def _with_prrte_env(golden: dict[str, Any]) -> dict[str, Any]:
    """The reference's output with PRRTE's variables after its ORTE ones, on an
    OpenMPI job's launcher."""
    if golden["defaulted"]["spec"].get("mpiImplementation") != "OpenMPI":
        return golden
    for label in GANGS:
        for container in golden[label]["launcher"]["spec"]["template"]["spec"]["containers"]:
            env = container.get("env") or []
            orte = [e for e in env if e["name"] in PRRTE_NAMES]
            if not orte:
                continue
            assert [e["name"] for e in orte] == list(PRRTE_NAMES), orte
            at = env.index(orte[-1]) + 1
            prrte = [{**e, "name": PRRTE_NAMES[e["name"]]} for e in orte]
            env[at:at] = [*prrte, PRRTE_RESOLVE]
    return golden


def _strip_kinds(obj: Any) -> Any:
    """Go's typed builders leave apiVersion/kind empty; ours fill them in for the API."""
    if isinstance(obj, dict) and "metadata" in obj:
        return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    return obj


@pytest.mark.parametrize("case_name", CASES)
def test_builders_match_reference_output(case_name: str) -> None:
    case = json.loads((HERE / "cases" / f"{case_name}.json").read_text())
    golden = _with_prrte_env(json.loads((HERE / "golden" / f"{case_name}.json").read_text()))
    ours = _ours(case)

    secret_ours, secret_ref = ours.pop("secret"), golden.pop("secret")
    assert sorted(secret_ours["data"]) == sorted(secret_ref["data"])
    assert base64.b64decode(secret_ours["data"]["ssh-publickey"]).startswith(
        b"ecdsa-sha2-nistp521 "
    )
    assert base64.b64decode(secret_ours["data"]["ssh-privatekey"]).startswith(
        b"-----BEGIN EC PRIVATE KEY-----\n"
    )
    for key in ("data",):
        secret_ours.pop(key), secret_ref.pop(key)
    assert _normalise(_strip_kinds(secret_ours)) == _normalise(secret_ref)

    assert _normalise(ours.pop("defaulted")) == _normalise(golden.pop("defaulted"))
    for label in GANGS:
        mine, ref = ours.pop(label), golden.pop(label)
        assert [_normalise(_strip_kinds(w)) for w in mine["workers"]] == [
            _normalise(w) for w in ref["workers"] or []
        ], label
        assert _normalise(_strip_kinds(mine["launcher"])) == _normalise(ref["launcher"]), label
        assert mine["events"] == (ref["events"] or []), label
        if "podGroup" in mine:
            assert _normalise(_strip_kinds(mine["podGroup"])) == _normalise(
                _strip_kinds(ref["podGroup"])
            ), label
    for name in ("configMap", "service"):
        assert _normalise(_strip_kinds(ours.pop(name))) == _normalise(golden.pop(name)), name
    assert ours == golden == {}
