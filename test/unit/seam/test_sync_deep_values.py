"""A job whose field holds a value nested 1,000 and more levels deep: the sync writes
nothing and reports one Warning ValidationError event naming the field, instead of
failing on every retry with RecursionError (the error message printed the value with
``json.dumps``, a Kubeflow enum's error with ``repr``). T9k's ``cleanUpWorkers`` is
free-form in its CRD, so the API server stores such a job; orjson's decoder takes up
to 1,024 levels, the depths here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from nesting import nested_object as nested
from seam_objects import MPIJobBuilder, T9kJobBuilder
from sync_fixtures import SyncWorld, kubeflow_world, t9k_world

Obj = dict[str, Any]
DEPTHS = [1_000, 1_020]
NOT_PRINTED = "nested more than 32 levels deep, not printed>"


def deep_in_cache(world: SyncWorld, put: Callable[[Obj], None]) -> SyncWorld:
    """``put`` the deep value into the cached job itself: the fixtures deep-copy what
    they are given, which recursion cannot do at these depths."""
    cached = world.cached("MPIJob", "pi")
    assert cached is not None
    put(cached)
    return world


async def reported(world: SyncWorld) -> str:
    await world.sync()
    assert world.writes == []
    assert world.events == [("Warning", "ValidationError")]
    (message,) = world.event_messages("ValidationError")
    assert len(message) < 2_000
    return message


@pytest.mark.parametrize("depth", DEPTHS)
async def test_t9k_clean_up_workers_nested_deep_is_reported(depth: int) -> None:
    world = t9k_world(T9kJobBuilder().obj())
    deep_in_cache(
        world, lambda job: job["spec"].__setitem__("runPolicy", {"cleanUpWorkers": nested(depth)})
    )
    message = await reported(world)
    assert message.startswith(
        "Found validation errors: spec.runPolicy.cleanUpWorkers: Invalid value: <an object "
        + NOT_PRINTED
    ), message
    assert message.endswith("input should be a valid string or a valid boolean")


@pytest.mark.parametrize("depth", DEPTHS)
async def test_kubeflow_clean_pod_policy_nested_deep_is_reported(depth: int) -> None:
    """The CRD types it a string; the parse path (``_parse``) is the one at stake."""
    world = kubeflow_world(MPIJobBuilder().obj())
    deep_in_cache(
        world, lambda job: job["spec"].__setitem__("runPolicy", {"cleanPodPolicy": nested(depth)})
    )
    message = await reported(world)
    assert message.startswith(
        "Found validation errors: spec.runPolicy.cleanPodPolicy: Invalid value: <an object "
        + NOT_PRINTED
    ), message


@pytest.mark.parametrize("depth", DEPTHS)
async def test_kubeflow_template_metadata_nested_deep_is_reported(depth: int) -> None:
    """Free-form in the CRD: validation's nesting limit names the level past it."""
    world = kubeflow_world(MPIJobBuilder().obj())
    deep_in_cache(
        world,
        lambda job: job["spec"]["mpiReplicaSpecs"]["Worker"]["template"].__setitem__(
            "metadata", {"x": nested(depth)}
        ),
    )
    message = await reported(world)
    assert message.startswith(
        "Found validation errors: spec.mpiReplicaSpecs[Worker].template.metadata.x.a.a"
    ), message
    assert "must be nested at most 32 objects and lists deep" in message
