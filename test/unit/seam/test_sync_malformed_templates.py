"""Pod templates the CRDs leave free, malformed where the builders read them: the sync
writes nothing and reports a ValidationError event naming the field, instead of
failing forever with a Python error. The cases are those of the hostile corpus
(test/fixtures/hostile/), which test/chaos/test_chaos_hostile.py also posts to a real
API server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from sync_fixtures import SyncWorld, kubeflow_world, t9k_world

HOSTILE = Path(__file__).parents[2] / "fixtures" / "hostile"
CASES = [
    "list-labels.yaml",
    "t9k/list-labels.yaml",
    "t9k/string-containers.yaml",
    "t9k/string-pod-spec.yaml",
]


@pytest.mark.parametrize("case", CASES)
async def test_a_malformed_template_is_reported_naming_the_field(case: str) -> None:
    spec = yaml.safe_load((HOSTILE / case).read_text())
    job = spec["object"]
    job["metadata"].setdefault("namespace", "default")
    job["metadata"].setdefault("uid", "uid-" + job["metadata"]["name"])
    world: SyncWorld = (t9k_world if case.startswith("t9k/") else kubeflow_world)(job)
    await world.sync()
    assert world.writes == []
    (message,) = world.event_messages("ValidationError")
    assert spec["field"] in message
