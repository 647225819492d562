"""Pods a sync created are kept, until the sync ends, in the form the cache keeps
(:func:`~mpi_operator.controller.core.objects.slim_pod`), not as the API returned them.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from mpi_operator.client.clock import FakeClock
from mpi_operator.client.errors import ApiError
from mpi_operator.controller.core.context import CoreContext
from mpi_operator.controller.core.expectations import CreationExpectations
from mpi_operator.controller.core.owner import Owner
from mpi_operator.controller.core.pods import (
    INITIAL_BATCH,
    MAX_CREATES_PER_SYNC,
    PendingPod,
    batch_sizes,
    create_pods,
    create_slow_start,
)
from mpi_operator.controller.core.state import JobState

Obj = dict[str, Any]


class EchoingClient:
    """Answers a create with the object sent, as the API server would (plus its fields);
    a name in ``existing`` exists already, and a get answers it."""

    def __init__(self, existing: dict[str, Obj] | None = None) -> None:
        self.created: list[str] = []
        self.unread = 0
        self.existing = existing or {}

    async def create(
        self, resource: Any, namespace: str | None, body: Obj, *, discard_answer: bool = False
    ) -> Obj:
        name = body["metadata"]["name"]
        if name in self.existing:
            raise ApiError(409, {"reason": "AlreadyExists", "message": "exists"})
        self.created.append(name)
        self.unread += discard_answer
        return {} if discard_answer else copy.deepcopy(body)

    async def get(self, resource: Any, namespace: str | None, name: str) -> Obj:
        return copy.deepcopy(self.existing[name])


def full_pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "managedFields": [{"manager": "kubelet"}]},
        "spec": {"containers": [{"name": "worker", "image": "busybox"}], "nodeName": "n1"},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


JOB = {"metadata": {"name": "pi", "namespace": "ns", "uid": "u1"}}
OWNER = Owner.of(JOB, "kubeflow.org/v2beta1", "MPIJob", {})


def adopted(name: str) -> Obj:
    """The pod as a get returns it: it exists already, and the job controls it."""
    pod = full_pod(name)
    pod["metadata"]["ownerReferences"] = [{"uid": "u1", "controller": True}]
    return pod


@pytest.mark.parametrize(
    ("existing", "created"),
    [
        pytest.param({}, ["pi-worker-0", "pi-worker-1"], id="created"),
        pytest.param({"pi-worker-1": adopted("pi-worker-1")}, ["pi-worker-0"], id="adopted"),
    ],
)
@pytest.mark.parametrize("answer", [True, False], ids=["answer-read", "answer-unread"])
async def test_created_pods_are_kept_slim(
    existing: dict[str, Obj], created: list[str], answer: bool
) -> None:
    clock, client = FakeClock(), EchoingClient(existing)
    ctx = CoreContext(
        client=client,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        clock=clock,
        state=JobState(clock, lambda key, message: False),
        requeue=lambda key: None,
        requeue_after=lambda key, seconds: None,
        continuing=lambda key: True,
    )
    names = ["pi-worker-0", "pi-worker-1"]
    pods = [(name, lambda name=name: full_pod(name)) for name in names]
    made = await create_pods(ctx, OWNER, pods, "", ("FailedCreatePod", ""), answer=answer)
    assert client.created == created
    assert sorted(made) == names
    for name, pod in made.items():
        assert pod["metadata"]["name"] == name
        assert "managedFields" not in pod["metadata"]
        assert pod["spec"] == {"nodeName": "n1"}
        assert pod["status"] == {"phase": "Pending"}
    assert client.unread == (0 if answer else len(created))


async def test_a_pod_created_without_a_status_counts_as_pending() -> None:
    """Its answer unread, a new pod has the phase the API server sets on every new pod."""
    clock, client = FakeClock(), EchoingClient()
    ctx = CoreContext(
        client=client,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        clock=clock,
        state=JobState(clock, lambda key, message: False),
        requeue=lambda key: None,
        requeue_after=lambda key, seconds: None,
        continuing=lambda key: True,
    )
    bare = {"metadata": {"name": "pi-worker-0", "labels": {"a": "b"}}, "spec": {}}
    made = await create_pods(
        ctx, OWNER, [("pi-worker-0", lambda: bare)], "", ("F", ""), answer=False
    )
    assert made["pi-worker-0"] == {
        "metadata": {"name": "pi-worker-0", "labels": {"a": "b"}},
        "spec": {},
        "status": {"phase": "Pending"},
    }


# ------------------------ test slowstart ------------------------
#
# Slow-start pod creation: growing batches, at most 500 a sync, expectations raised
# before the calls, a requeue for what is left.


Obj = dict[str, Any]


@pytest.mark.parametrize(
    ("count", "limit", "sizes"),
    [
        (0, 500, []),
        (1, 500, [1]),
        (5, 500, [5]),
        (8, 500, [8]),
        (9, 500, [8, 1]),
        (30, 500, [8, 16, 6]),
        (500, 500, [8, 16, 32, 64, 128, 252]),
        (20_000, 500, [8, 16, 32, 64, 128, 252]),
        (100_000, 500, [8, 16, 32, 64, 128, 252]),
        (10, 3, [3]),
        (100, 20, [8, 12]),
    ],
)
def test_batches_start_at_8_and_double_up_to_the_per_sync_cap(
    count: int, limit: int, sizes: list[int]
) -> None:
    assert batch_sizes(count, limit) == sizes
    assert sum(sizes) == min(count, limit)


def _pending(n: int, calls: list[str], fail: frozenset[str] = frozenset()) -> list[PendingPod]:
    def make(name: str) -> Any:
        async def create() -> Obj:
            calls.append(name)
            await asyncio.sleep(0)
            if name in fail:
                raise RuntimeError(f"create {name} failed")
            return {"metadata": {"name": name}}

        return create

    return [(f"w-{i}", make(f"w-{i}")) for i in range(n)]


async def test_one_sync_creates_at_most_the_cap_and_requeues_the_rest() -> None:
    exp = CreationExpectations(FakeClock())
    calls: list[str] = []
    requeued: list[str] = []
    created = await create_slow_start(exp, "ns/big", _pending(20_000, calls), requeued.append)
    assert len(created) == len(calls) == MAX_CREATES_PER_SYNC
    assert requeued == ["ns/big"]
    assert exp.unobserved("ns/big", []) == set(created)  # in flight until the cache shows them


async def test_no_requeue_when_everything_fits() -> None:
    exp = CreationExpectations(FakeClock())
    requeued: list[str] = []
    created = await create_slow_start(exp, "ns/small", _pending(3, []), requeued.append)
    assert sorted(created) == ["w-0", "w-1", "w-2"]
    assert requeued == []


async def test_a_failed_batch_stops_creation_and_lowers_its_expectations() -> None:
    exp = CreationExpectations(FakeClock())
    calls: list[str] = []
    requeued: list[str] = []
    with pytest.raises(RuntimeError, match="w-10"):
        await create_slow_start(
            exp, "ns/j", _pending(50, calls, frozenset({"w-10"})), requeued.append
        )
    assert calls == [f"w-{i}" for i in range(24)]  # batches 8, 16; no third batch
    assert exp.unobserved("ns/j", []) == {f"w-{i}" for i in range(24)} - {"w-10"}
    assert requeued == []  # the error's backoff retries it


async def test_names_are_expected_before_the_calls_return() -> None:
    """The informer's add event may come before the create's response: it must find
    the name expected, or the pod would stay in flight after being deleted."""
    exp = CreationExpectations(FakeClock())
    seen: list[set[str]] = []

    async def create() -> Obj:
        seen.append(exp.unobserved("ns/j", []))
        return {"metadata": {"name": "w-0"}}

    await create_slow_start(exp, "ns/j", [("w-0", create)], None)
    assert seen == [{"w-0"}]


@pytest.mark.parametrize(
    ("count", "continuing", "created_now", "requeued"),
    [
        (20_000, False, INITIAL_BATCH, True),  # a first turn: one batch, then continue
        (20_000, True, MAX_CREATES_PER_SYNC, True),  # a continuation: the whole 500
        (MAX_CREATES_PER_SYNC, False, MAX_CREATES_PER_SYNC, False),  # fits: all at once
        (30, False, 30, False),
    ],
)
async def test_a_job_that_needs_more_than_one_turn_takes_one_batch_on_its_first(
    count: int, continuing: bool, created_now: int, requeued: bool
) -> None:
    """A big job's turn that is not a continuation creates one batch and goes on as a
    continuation; a job whose pods fit in one sync creates them all, whatever the turn
    (cutting a 30-worker job short let its launcher finish before its workers existed,
    under API Priority and Fairness rejections)."""
    exp = CreationExpectations(FakeClock())
    calls: list[str] = []
    keys: list[str] = []
    created = await create_slow_start(
        exp, "ns/j", _pending(count, calls), keys.append, continuing=continuing
    )
    assert len(created) == created_now
    assert keys == (["ns/j"] if requeued else [])


async def test_the_creates_of_a_batch_start_one_per_turn_of_the_loop() -> None:
    """Each create builds its pod (and encodes it) before its first wait: started all
    in one turn, a batch would hold the loop for every build in a row. A ticker task
    advances once per turn; no two creates may start within the same turn."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    seen: list[int] = []

    def make(name: str) -> Any:
        async def create() -> Obj:
            seen.append(ticks)  # the synchronous part: where the pod is built
            await asyncio.sleep(0)
            return {"metadata": {"name": name}}

        return create

    task = asyncio.ensure_future(ticker())
    try:
        pending = [(f"w-{i}", make(f"w-{i}")) for i in range(30)]
        await create_slow_start(CreationExpectations(FakeClock()), "ns/j", pending, None)
    finally:
        task.cancel()
    assert len(seen) == 30
    assert len(set(seen)) == 30, seen


async def test_the_creates_of_a_batch_still_run_together() -> None:
    """Started one by one, but in flight at once: the 8 creates of the first batch all
    wait for the last one to start."""
    started: list[str] = []
    all_in = asyncio.Event()

    def make(name: str) -> Any:
        async def create() -> Obj:
            started.append(name)
            if len(started) == 8:
                all_in.set()
            await asyncio.wait_for(all_in.wait(), 5)
            return {"metadata": {"name": name}}

        return create

    pending = [(f"w-{i}", make(f"w-{i}")) for i in range(8)]
    created = await create_slow_start(CreationExpectations(FakeClock()), "ns/j", pending, None)
    assert len(created) == 8


async def test_a_sync_cancelled_while_starting_a_batch_cancels_the_creates_started() -> None:
    cancelled: list[str] = []
    started: list[str] = []
    three_in = asyncio.Event()

    def make(name: str) -> Any:
        async def create() -> Obj:
            started.append(name)
            if len(started) == 3:
                three_in.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(name)
                raise
            return {}

        return create

    pending = [(f"w-{i}", make(f"w-{i}")) for i in range(8)]
    sync = asyncio.ensure_future(
        create_slow_start(CreationExpectations(FakeClock()), "ns/j", pending, None)
    )
    await three_in.wait()
    sync.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sync
    await asyncio.sleep(0)
    assert 3 <= len(started) < 8
    assert sorted(cancelled) == sorted(started)
