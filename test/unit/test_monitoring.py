"""The monitoring files of deploy/monitoring/: the Grafana dashboard's queries name only
metrics that exist (the operator's own registry, or the kube-state-metrics
configuration of this repository), and that configuration has the shape
kube-state-metrics reads, with every path present in our CRDs' schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml
from prometheus_client import CollectorRegistry

from mpi_operator.api.t9k.types import Phase
from mpi_operator.api.v2beta1.types import ConditionType
from mpi_operator.client.kubeapi import KubeClient
from mpi_operator.client.leaderelection import LeaderElectionConfig, LeaderElector
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.t9k.controller import T9kMPIJobController

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy/monitoring/grafana-dashboard.json"
KSM = ROOT / "deploy/monitoring/kube-state-metrics.yaml"
CRDS = {
    ("kubeflow.org", "v2beta1", "MPIJob"): ROOT / "crd/kubeflow.org_mpijobs.yaml",
    ("batch.tensorstack.dev", "v1beta1", "MPIJob"): ROOT
    / "crd/t9k/batch.tensorstack.dev_mpijobs.yaml",
}

_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "gauge": ("",),
}


async def _operator_metric_names() -> set[str]:
    """Every series name the operator process exports, from its own registry."""
    registry = CollectorRegistry()
    client = KubeClient(cast(Any, SimpleNamespace(host="https://x")))
    kubeflow = MPIJobController(client, ControllerOptions(), registry=registry)
    T9kMPIJobController(client, ControllerOptions(), recorder=kubeflow.recorder, registry=registry)
    LeaderElector(client, LeaderElectionConfig("mpi-operator", "mpi-operator"), registry=registry)
    return {
        family.name + suffix for family in registry.collect() for suffix in _SUFFIXES[family.type]
    }


def _ksm_metric_names() -> set[str]:
    config = yaml.safe_load(KSM.read_text())
    return {
        f"{resource['metricNamePrefix']}_{metric['name']}"
        for resource in config["spec"]["resources"]
        for metric in resource["metrics"]
    }


_NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
_NOT_METRICS |= {"and", "or", "unless", "offset", "inf", "nan"}


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, aggregations, label
    matchers, grouping clauses, ranges and Grafana variables left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    expr = re.sub(r"\$\{?\w+\}?", "", expr)  # Grafana variables
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        if match[2] is None and match[1] not in _NOT_METRICS:
            names.add(match[1])
    return names


def test_promql_metric_names() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le) (rate(x_bucket{name="a b", ns=~"$ns"}'
        "[$__rate_interval]))) / on(job) group_left y or vector(0) > bool 1e3"
    )
    assert promql_metric_names(expr) == {"x_bucket", "y"}


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            exprs.append(variable["query"]["query"].removeprefix("label_values(").split(",")[0])
    return exprs


async def test_dashboard_names_only_metrics_that_exist() -> None:
    operator = await _operator_metric_names()
    ksm = _ksm_metric_names()
    used = set().union(*(promql_metric_names(e) for e in _dashboard_exprs()))
    assert used - operator - ksm == set()
    # Built on the operator's own metrics: every family shows up somewhere.
    families = {re.sub(r"_(total|bucket|count|sum)$", "", n) for n in used & operator}
    assert families >= {
        "mpi_operator_jobs_created",
        "mpi_operator_jobs_successful",
        "mpi_operator_jobs_failed",
        "mpi_operator_job_info",
        "mpi_operator_is_leader",
        "mpi_operator_reconcile_duration_seconds",
        "mpi_operator_job_duration_seconds",
        "mpi_operator_events_dropped",
        "workqueue_depth",
        "workqueue_adds",
        "workqueue_retries",
        "workqueue_queue_duration_seconds",
    }


def test_dashboard_is_importable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["gridPos"]["x"] >= 0 and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


# -- kube-state-metrics -----------------------------------------------------------------

_EACH = {
    "Gauge": {"path", "valueFrom", "labelsFromPath", "labelFromKey", "nilIsZero"},
    "StateSet": {"path", "labelName", "list", "valueFrom", "labelsFromPath"},
    "Info": {"path", "labelsFromPath", "labelFromKey"},
}


def _resolve(schema: dict[str, Any], path: list[str], where: str) -> dict[str, Any]:
    """The schema at ``path`` (object properties, map values, list items)."""
    for segment in path:
        if schema.get("type") == "array":
            schema = schema["items"]
        props = schema.get("properties") or {}
        if segment in props:
            schema = props[segment]
        elif "additionalProperties" in schema:
            schema = schema["additionalProperties"]
        else:
            raise AssertionError(f"{where}: {segment!r} of {path} is not in the CRD schema")
    return schema


def _crd_schema(gvk: tuple[str, str, str]) -> dict[str, Any]:
    crd = next(d for d in yaml.safe_load_all(CRDS[gvk].read_text()) if d)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == gvk[1]]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}},
    }
    return cast(dict[str, Any], schema)


def _labels_ok(labels: dict[str, list[str]], schema: dict[str, Any], where: str) -> None:
    for label, path in labels.items():
        assert re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", label), f"{where}: label {label}"
        assert _resolve(schema, path, where).get("type") in ("string", "integer", "boolean")


def test_ksm_config_has_the_shape_kube_state_metrics_reads() -> None:
    config = yaml.safe_load(KSM.read_text())
    assert set(config) == {"kind", "spec"} and config["kind"] == "CustomResourceStateMetrics"
    resources = config["spec"]["resources"]
    assert {
        tuple(r["groupVersionKind"][k] for k in ("group", "version", "kind")) for r in resources
    } == set(CRDS)
    for resource in resources:
        gvk = tuple(resource["groupVersionKind"][k] for k in ("group", "version", "kind"))
        assert set(resource) <= {
            "groupVersionKind",
            "metricNamePrefix",
            "labelsFromPath",
            "metrics",
        }
        root = _crd_schema(gvk)  # type: ignore[arg-type]
        _labels_ok(resource["labelsFromPath"], root, str(gvk))
        names = [m["name"] for m in resource["metrics"]]
        assert len(names) == len(set(names))
        for metric in resource["metrics"]:
            where = f"{gvk} {metric['name']}"
            assert set(metric) == {"name", "help", "each"}, where
            kind = metric["each"]["type"]
            body = metric["each"][kind[0].lower() + kind[1:]]
            assert set(metric["each"]) == {"type", kind[0].lower() + kind[1:]}, where
            assert set(body) <= _EACH[kind], where
            at = _resolve(root, body.get("path", []), where)
            if at.get("type") == "array":
                at = at["items"]
            if "labelFromKey" in body:
                assert "additionalProperties" in at, f"{where}: labelFromKey needs a map"
                at = at["additionalProperties"]
            if kind == "Gauge":
                value = _resolve(at, body.get("valueFrom", []), where)
                assert value.get("type") in ("integer", "number", "string", "boolean"), where
            _labels_ok(body.get("labelsFromPath", {}), at, where)


@pytest.mark.parametrize(
    ("prefix", "metric", "values"),
    [
        ("kube_mpijob", "state", [c.value for c in ConditionType]),
        ("kube_t9k_mpijob", "phase", [p.value for p in Phase]),
    ],
)
def test_ksm_state_sets_list_every_value(prefix: str, metric: str, values: list[str]) -> None:
    config = yaml.safe_load(KSM.read_text())
    (resource,) = [r for r in config["spec"]["resources"] if r["metricNamePrefix"] == prefix]
    (found,) = [m for m in resource["metrics"] if m["name"] == metric]
    assert sorted(found["each"]["stateSet"]["list"]) == sorted(values)
