"""The template limits of issue 46: a pod template's JSON size and the nesting of
free-form fields, refused by ``validate`` of both APIs with an error that names the
field and the limit; every example and parity fixture is within them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from devcluster.sample_jobs import pi_mpijob
from mpi_operator.api import t9k, v2beta1
from mpi_operator.api.field_errors import FieldError, aggregate
from mpi_operator.api.limits import (
    MAX_NESTING_DEPTH,
    MAX_TEMPLATE_BYTES,
    nesting_errors,
    template_limit_errors,
)

REPO = Path(__file__).resolve().parents[3]
Obj = dict[str, Any]


def nested(depth: int, key: str = "a") -> Any:
    """``depth`` objects, one in the other."""
    value: Any = "leaf"
    for _ in range(depth):
        value = {key: value}
    return value


def env_entries(count: int) -> list[Obj]:
    return [{"name": f"E{i:05d}", "value": "x"} for i in range(count)]


def fill_to(template: Obj, size: int) -> None:
    """Grows the first container's env with small entries until the template's JSON
    takes exactly ``size`` bytes (the last value is padded)."""
    container = template["spec"]["containers"][0]
    container.setdefault("env", [])
    while len(orjson.dumps(template)) < size - 80:
        container["env"].append({"name": f"E{len(container['env']):05d}", "value": "x"})
    container["env"].append({"name": "PAD", "value": ""})
    missing = size - len(orjson.dumps(template))
    container["env"][-1]["value"] = "p" * missing
    assert len(orjson.dumps(template)) == size


def message(errors: list[FieldError]) -> str:
    return aggregate(errors) if errors else ""


def kubeflow_errors(change: Callable[[Obj], None]) -> str:
    obj = pi_mpijob("pi", workers=2)
    obj["metadata"]["namespace"] = "default"
    change(obj)
    job = v2beta1.set_defaults(v2beta1.parse(obj))
    return message(v2beta1.validate(job))


def t9k_obj() -> Obj:
    obj: Obj = yaml.safe_load((REPO / "examples" / "t9k" / "pi.yaml").read_text())
    obj["metadata"]["namespace"] = "default"
    return obj


def t9k_errors(change: Callable[[Obj], None]) -> str:
    obj = t9k_obj()
    change(obj)
    return message(t9k.validate(t9k.set_defaults(t9k.parse(obj))))


def kf_template(obj: Obj, role: str = "Worker") -> Obj:
    template: Obj = obj["spec"]["mpiReplicaSpecs"][role]["template"]
    return template


def set_kf_metadata(value: Any) -> Callable[[Obj], None]:
    return lambda obj: kf_template(obj).__setitem__("metadata", {"labels": {}, "extra": value})


WORKER = "spec.mpiReplicaSpecs[Worker].template"
LAUNCHER = "spec.mpiReplicaSpecs[Launcher].template"
T9K = "spec.worker.template"
SIZE = f"must have at most {MAX_TEMPLATE_BYTES} bytes as JSON"
DEPTH = f"must be nested at most {MAX_NESTING_DEPTH} objects and lists deep"

# (case, errors of the job after the change, the field and the limit named, or None)
CASES: list[tuple[str, Callable[[], str], tuple[str, str] | None]] = [
    (
        "kubeflow worker template at the limit",
        lambda: kubeflow_errors(lambda o: fill_to(kf_template(o), MAX_TEMPLATE_BYTES)),
        None,
    ),
    (
        "kubeflow worker template one byte over",
        lambda: kubeflow_errors(lambda o: fill_to(kf_template(o), MAX_TEMPLATE_BYTES + 1)),
        (f"{WORKER}: Too long: ", SIZE),
    ),
    (
        "kubeflow launcher template over",
        lambda: kubeflow_errors(
            lambda o: fill_to(kf_template(o, "Launcher"), MAX_TEMPLATE_BYTES + 500)
        ),
        (f"{LAUNCHER}: Too long: ", f"{SIZE} (each pod built from it carries it), has 66036"),
    ),
    (
        "kubeflow metadata nested to the limit",
        # template (level 1), metadata (2), then extra's objects from level 3 on.
        lambda: kubeflow_errors(set_kf_metadata(nested(MAX_NESTING_DEPTH - 2))),
        None,
    ),
    (
        "kubeflow metadata nested one past the limit",
        lambda: kubeflow_errors(set_kf_metadata(nested(MAX_NESTING_DEPTH - 1))),
        (f"{WORKER}.metadata.extra{'.a' * (MAX_NESTING_DEPTH - 2)}: Invalid value: 33: ", DEPTH),
    ),
    (
        "kubeflow metadata nested 900 deep, through lists and odd keys",
        lambda: kubeflow_errors(set_kf_metadata([nested(899, "x.y")])),
        (f"{WORKER}.metadata.extra[0][x.y][x.y]", f"{DEPTH} (counted from {WORKER})"),
    ),
    (
        "t9k template at the limit",
        lambda: t9k_errors(lambda o: fill_to(o["spec"]["worker"]["template"], MAX_TEMPLATE_BYTES)),
        None,
    ),
    (
        "t9k template over, made of many small env entries",
        lambda: t9k_errors(
            lambda o: fill_to(o["spec"]["worker"]["template"], 4 * MAX_TEMPLATE_BYTES)
        ),
        (f"{T9K}: Too long: ", f"{SIZE} (each pod built from it carries it), has 262144"),
    ),
    (
        "t9k template nested too deep in the pod spec",
        lambda: t9k_errors(
            lambda o: o["spec"]["worker"]["template"]["spec"].__setitem__("x", nested(100))
        ),
        (f"{T9K}.spec.x.a.a", DEPTH),
    ),
]


@pytest.mark.parametrize(("case", "errors", "named"), CASES, ids=[c[0] for c in CASES])
def test_template_limits(
    case: str, errors: Callable[[], str], named: tuple[str, str] | None
) -> None:
    message = errors()
    if named is None:
        assert message == "", case
    else:
        field, limit = named
        assert message.startswith(field), message[:300]
        assert limit in message, message[:300]
        assert len(message) < 2_000  # the value is not printed


def test_a_template_over_both_limits_is_not_encoded() -> None:
    """Nesting is checked first: orjson cannot even encode 300 levels."""
    template = {"spec": {"containers": [{"name": "x", "env": env_entries(5_000)}]}}
    template["metadata"] = nested(300)
    errors = template_limit_errors(template, "t")
    assert len(errors) == 1 and errors[0].field.startswith("t.metadata.a.a")


def test_long_keys_are_cut_in_the_path() -> None:
    errors = nesting_errors(nested(40, "k" * 1_000), "p")
    assert errors and len(errors[0].field) < 3_000
    assert errors[0].field.startswith("p[" + "k" * 63 + "...]")


def test_a_shape_error_is_only_read_within_the_limits() -> None:
    """A huge template whose labels are a list gets the size error only: the shape
    errors print the bad value, which would put the whole list in the event."""

    def change(obj: Obj) -> None:
        template = kf_template(obj)
        template["metadata"] = {"labels": [f"l{i}" for i in range(20_000)]}

    message = kubeflow_errors(change)
    assert message.startswith(f"{WORKER}: Too long"), message[:300]
    assert len(message) < 500


def _mpijobs(doc: Any) -> list[Obj]:
    if isinstance(doc, dict):
        found = [doc] if doc.get("kind") == "MPIJob" and isinstance(doc.get("spec"), dict) else []
        return found + [j for v in doc.values() for j in _mpijobs(v)]
    if isinstance(doc, list):
        return [j for v in doc for j in _mpijobs(v)]
    return []


def _fixture_jobs() -> list[tuple[str, Obj]]:
    """Every MPIJob of the examples and of the parity fixtures (cases and golden)."""
    paths = [*sorted((REPO / "examples").rglob("*.yaml"))]
    paths += sorted((REPO / "test" / "unit" / "builders").rglob("*.json"))
    jobs = []
    for path in paths:
        text = path.read_text()
        docs = list(yaml.safe_load_all(text)) if path.suffix == ".yaml" else [json.loads(text)]
        jobs += [(str(path.relative_to(REPO)), job) for job in _mpijobs(docs)]
    return jobs


def test_every_example_and_parity_fixture_is_within_the_limits() -> None:
    jobs = _fixture_jobs()
    assert len(jobs) >= 40
    for where, job in jobs:
        spec = job["spec"]
        templates = [
            (f"{where}: {role}", replica["template"])
            for role, replica in (spec.get("mpiReplicaSpecs") or {}).items()
            if isinstance(replica, dict) and "template" in replica
        ]
        if isinstance(spec.get("worker"), dict):
            templates.append((f"{where}: worker", spec["worker"].get("template") or {}))
        for name, template in templates:
            assert template_limit_errors(template, "t") == [], name
