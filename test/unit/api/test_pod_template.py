"""The shape check of free-form pod templates: one field error per malformed part the
builders read, each naming its path; a well-formed template has none."""

from __future__ import annotations

from typing import Any

import pytest

from mpi_operator.api.pod_template import template_errors

P = "spec.worker.template"
GOOD: dict[str, Any] = {
    "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
    "spec": {
        "containers": [
            {
                "name": "mpi-worker",
                "image": "mpi-pi",
                "command": ["sshd"],
                "env": [{"name": "A", "value": "1"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            }
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "dnsConfig": {"searches": ["a.b"]},
        "hostNetwork": False,
        "nodeSelector": {"zone": "a"},
    },
}


@pytest.mark.parametrize(
    ("template", "errors"),
    [
        (GOOD, []),
        ({}, []),
        ("pod", [f'{P}: Invalid value: "pod": must be an object']),
        ({"metadata": []}, [f"{P}.metadata: Invalid value: []: must be an object"]),
        (
            {"metadata": {"labels": ["a"]}},
            [f'{P}.metadata.labels: Invalid value: ["a"]: must be a map of strings to strings'],
        ),
        (
            {"metadata": {"annotations": {"n": 1}}},
            [
                f'{P}.metadata.annotations: Invalid value: {{"n": 1}}: must be a map of strings to strings'
            ],
        ),
        ({"spec": "abc"}, [f'{P}.spec: Invalid value: "abc": must be an object']),
        (
            {"spec": {"containers": "abc"}},
            [f'{P}.spec.containers: Invalid value: "abc": must be a list'],
        ),
        (
            {"spec": {"containers": ["abc"]}},
            [f'{P}.spec.containers[0]: Invalid value: "abc": must be an object'],
        ),
        (
            {"spec": {"containers": [{"env": {"A": "1"}}]}},
            [f'{P}.spec.containers[0].env: Invalid value: {{"A": "1"}}: must be a list of objects'],
        ),
        (
            {"spec": {"initContainers": [{"command": "sh -c x"}]}},
            [
                f'{P}.spec.initContainers[0].command: Invalid value: "sh -c x": must be a list of strings'
            ],
        ),
        (
            {"spec": {"containers": [{"resources": {"limits": 4}}]}},
            [f"{P}.spec.containers[0].resources.limits: Invalid value: 4: must be an object"],
        ),
        (
            {"spec": {"volumes": {}}},
            [f"{P}.spec.volumes: Invalid value: {{}}: must be a list of objects"],
        ),
        (
            {"spec": {"dnsConfig": {"searches": "a.b"}}},
            [f'{P}.spec.dnsConfig.searches: Invalid value: "a.b": must be a list of strings'],
        ),
        (
            {"spec": {"hostNetwork": "yes"}},
            [f'{P}.spec.hostNetwork: Invalid value: "yes": must be a boolean'],
        ),
        (
            {"spec": {"schedulerName": 7}},
            [f"{P}.spec.schedulerName: Invalid value: 7: must be a string"],
        ),
    ],
)
def test_template_errors(template: Any, errors: list[str]) -> None:
    assert [str(e) for e in template_errors(template, P)] == errors


def test_null_label_and_annotation_values_pass_as_in_go() -> None:
    """Go decodes null into a map's string as "": the reference runs such a job."""
    assert (
        template_errors({"metadata": {"labels": {"a": None}, "annotations": {"b": None}}}, P) == []
    )
