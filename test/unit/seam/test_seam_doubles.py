"""The seam's own doubles: the recording client records and reacts as the sync tests
rely on, and keeps the real client's verbs."""

from __future__ import annotations

import inspect

import pytest
from recording_client import (
    Action,
    ApiError,
    RecordingClient,
    already_exists,
    internal_error,
    merge_patch,
)
from seam_objects import MPIJobBuilder, PodBuilder

from mpi_operator.client import MPIJOBS, PODS, SERVICES, KubeClient

VERBS = ("create", "get", "list", "replace", "replace_status", "patch", "delete")


@pytest.mark.parametrize("verb", VERBS)
def test_the_recording_client_takes_the_arguments_of_the_real_one(verb: str) -> None:
    real = inspect.signature(getattr(KubeClient, verb)).parameters
    double = inspect.signature(getattr(RecordingClient, verb)).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in double.values())
    for name, parameter in real.items():
        assert name in double or (takes_any and parameter.kind is parameter.KEYWORD_ONLY), name


async def test_every_call_is_recorded_in_order_with_its_body() -> None:
    client = RecordingClient()
    pod = PodBuilder("p").obj()
    created = await client.create(PODS, "ns", pod)
    await client.patch(PODS, "ns", "p", {"metadata": {"labels": {"a": "b"}}})
    await client.delete(PODS, "ns", "p", propagation_policy="Foreground")
    assert [a.short for a in client.actions] == [
        ("create", "pods", "p"),
        ("patch", "pods", "p"),
        ("delete", "pods", "p"),
    ]
    assert client.actions[0].body == pod
    assert client.actions[2].options == {"propagation_policy": "Foreground"}
    assert created["metadata"]["name"] == "p"


async def test_a_get_without_an_answer_is_not_found() -> None:
    client = RecordingClient()
    with pytest.raises(ApiError) as raised:
        await client.get(SERVICES, "ns", "svc")
    assert raised.value.status == 404
    assert client.actions == [Action("get", "services", "ns", "svc", error=raised.value)]


async def test_an_injected_error_fails_only_the_matching_calls_and_only_so_often() -> None:
    client = RecordingClient()
    client.fail("create", "pods", internal_error(), name="b", times=1)
    await client.create(PODS, "ns", PodBuilder("a").obj())
    with pytest.raises(ApiError):
        await client.create(PODS, "ns", PodBuilder("b").obj())
    await client.create(PODS, "ns", PodBuilder("b").obj())
    assert [a.error is not None for a in client.actions] == [False, True, False]


async def test_the_reactor_added_last_is_tried_first() -> None:
    client = RecordingClient()
    job = MPIJobBuilder("pi").obj()
    client.fail("get", "*", already_exists())
    client.answer("get", "mpijobs", "pi", job)
    assert await client.get(MPIJOBS, "default", "pi") == job
    with pytest.raises(ApiError):
        await client.get(PODS, "default", "pi")


def test_merge_patch_follows_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": [1]}
    assert merge_patch(target, {"a": {"b": None, "e": 3}, "d": [2]}) == {
        "a": {"c": 2, "e": 3},
        "d": [2],
    }
    assert target == {"a": {"b": 1, "c": 2}, "d": [1]}  # untouched
