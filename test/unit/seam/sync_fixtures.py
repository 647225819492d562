"""The unit seam of the sync handlers: a world of cached objects, a controller syncing it
with a recording client, and what it did.

This is the ONE module of the seam that knows the operator's internals (controller
classes, their sync context, option types). Tests talk only to :func:`kubeflow_world`,
:func:`t9k_world`, :func:`gang` and :class:`SyncWorld`; when the controllers' modules
move, only the imports here and :func:`_world` change.

A world is seeded into the informers' own indexers (the real
:class:`~mpi_operator.client.store.Indexer`, with the controller's indexes), and the
controller is the production class, wired as in the process, except that its client is
a :class:`~recording_client.RecordingClient`, its recorder keeps events in a list and
its clock is a fake one. Nothing is started: no informer, no worker, no event loop task.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from recording_client import Action, RecordingClient, merge_patch
from seam_objects import MPIJobBuilder, PodBuilder, T9kJobBuilder, pod_status

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.builders.ssh import SSHKeyPair
from mpi_operator.client import EventRecorder, FakeClock
from mpi_operator.client.selectors import parse_selector
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions
from mpi_operator.controller.t9k import T9kMPIJobController

Obj = dict[str, Any]

#: A job's workers deleted in one request (a delete of the pods collection).
DELETE_WORKERS = ("deletecollection", "pods", "")

# Documented behaviour (docs/), spelled out here rather than imported, so that a
# change of the code's constants is caught by the tests.
#: The reason of the Warning a persistently failing sync puts on its MPIJob.
SYNC_FAILED = "SyncFailed"
#: How many identical failures in a row make a failure persistent.
REPEATS = 3
#: The most pods one sync creates (the Job controller's MaxPodCreateDeletePerSync).
MAX_CREATES_PER_SYNC = 500

#: A fixed SSH key pair: key generation is the slowest thing a sync does.
_KEYS = SSHKeyPair(
    b"-----BEGIN EC PRIVATE KEY-----\nc2VhbQ==\n-----END EC PRIVATE KEY-----\n",
    b"ecdsa-sha2-nistp521 c2VhbQ== seam\n",
)

# Which informer caches an object, by kind (both controllers name them alike).
_INFORMER_BY_KIND = {
    "MPIJob": "mpijobs",
    "Pod": "pods",
    "Job": "jobs",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "PodGroup": "pod_groups",
    "PriorityClass": "priority_classes",
}
_WORKLOAD_API_GROUP = "scheduling.k8s.io/"
_INFORMER_BY_RESOURCE = {
    "mpijobs": "mpijobs",
    "mpijobs/status": "mpijobs",
    "pods": "pods",
    "jobs": "jobs",
    "jobs/status": "jobs",
    "services": "services",
    "configmaps": "configmaps",
    "secrets": "secrets",
    "podgroups": "pod_groups",
}


class RecordingRecorder(EventRecorder):
    """The real recorder's interface; events are kept, never sent."""

    def __init__(self, clock: FakeClock, registry: CollectorRegistry) -> None:
        super().__init__(_NoSink(), clock=clock, registry=registry)
        self.recorded: list[tuple[str, str, str, Obj]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.recorded.append((event_type, reason, message, dict(obj)))


class _NoSink:
    async def create(self, event: Obj) -> Obj:
        raise AssertionError("the seam's recorder never writes")

    async def patch(self, event: Obj, patch: Any) -> Obj:
        raise AssertionError("the seam's recorder never writes")


@dataclass
class SyncWorld:
    """What one controller sees and does for one MPIJob key."""

    kind: str  # "kubeflow" or "t9k"
    key: str
    client: RecordingClient
    clock: FakeClock
    controller: Any
    recorder: RecordingRecorder
    requeued: list[str] = field(default_factory=list)
    requeued_after: list[tuple[str, float]] = field(default_factory=list)
    _settled: int = 0
    #: How often each key was created: a name made anew gets a new uid.
    _made: dict[str, int] = field(default_factory=dict)

    # -- seeding -----------------------------------------------------------
    def _indexer(self, informer: str) -> Any:
        found = getattr(self.controller.informers, informer, None)
        if found is None:
            raise KeyError(f"the {self.kind} controller has no {informer} cache here")
        return found.indexer

    def _informer_of(self, informer: str, obj: Obj | None) -> str:
        """A T9k controller caches the Workload API's PodGroups apart from the t9k
        scheduler's (with that gang scheduling only)."""
        api_version = str((obj or {}).get("apiVersion") or "")
        separate = getattr(self.controller.informers, "gang_pod_groups", None) is not None
        if informer == "pod_groups" and separate and api_version.startswith(_WORKLOAD_API_GROUP):
            return "gang_pod_groups"
        return informer

    def add(self, *objs: Obj) -> SyncWorld:
        """Puts objects into the caches (replacing any of the same name); an MPIJob
        without a generation gets the API server's first, 1."""
        for obj in objs:
            obj = copy.deepcopy(obj)
            if obj["kind"] == "MPIJob":
                obj.setdefault("metadata", {}).setdefault("generation", 1)
            informer = self._informer_of(_INFORMER_BY_KIND[obj["kind"]], obj)
            self._indexer(informer).add(obj)
        return self

    def job_deleted(self) -> None:
        """What the MPIJob informer's delete event makes the controller do (the job
        stays in the cache here: a later sync sees it as created again)."""
        self.controller._job_gone(self.key)

    def remove(self, kind: str, name: str) -> None:
        namespace = self.key.split("/")[0]
        self._indexer(_INFORMER_BY_KIND[kind]).delete_key(f"{namespace}/{name}")

    def cached(self, kind: str, name: str) -> Obj | None:
        namespace = self.key.split("/")[0]
        found: Obj | None = self._indexer(_INFORMER_BY_KIND[kind]).get_by_key(f"{namespace}/{name}")
        return found

    def names(self, kind: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self._indexer(_INFORMER_BY_KIND[kind]).list())

    def change(self, kind: str, name: str, patch: Obj) -> None:
        """Merge-patches a cached object (the kubelet, the Job controller, a user)."""
        current = self.cached(kind, name)
        assert current is not None, f"{kind} {name} is not cached"
        changed = merge_patch(current, patch)
        if kind == "MPIJob" and "spec" in patch:  # as the API server counts a spec's versions
            changed["metadata"]["generation"] += 1  # add() gave every MPIJob one
        self.add(changed)

    def settle(self) -> None:
        """The caches catch up with every successful write since the last settle: what
        the informers would show once the watch events arrived."""
        for action in self.client.actions[self._settled :]:
            if action.is_write() and action.error is None:
                self._apply(action)
        self._settled = len(self.client.actions)

    def _apply(self, action: Action) -> None:
        informer = self._informer_of(_INFORMER_BY_RESOURCE[action.resource], action.body)
        indexer = self._indexer(informer)
        namespace = action.namespace or ""
        key = f"{namespace}/{action.name}"
        if action.verb == "create":
            obj = copy.deepcopy(action.body)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", namespace)
            # A name made anew gets a new uid, as from the API server.
            made = self._made[key] = self._made.get(key, 0) + 1
            meta.setdefault("uid", f"uid-{action.name}" + (f"-{made}" if made > 1 else ""))
            indexer.add(obj)
        elif action.verb == "update":
            indexer.add(copy.deepcopy(action.body))
        elif action.verb == "patch":
            indexer.add(merge_patch(indexer.get_by_key(key) or {}, action.body))
        elif action.verb == "delete":
            indexer.delete_key(key)
        elif action.verb == "deletecollection":
            for obj in indexer.list():
                meta = obj["metadata"]
                if meta.get("namespace") == namespace and _collection_matches(action, obj):
                    indexer.delete_key(f"{namespace}/{meta['name']}")

    # -- syncing -----------------------------------------------------------
    async def sync(self) -> None:
        """One sync of the key, as a worker runs it; raises what the sync raises."""
        finish = await self.controller.syncer.sync(self.key)
        if finish is not None:
            await finish()

    async def sync_error(self) -> BaseException:
        """One sync that must fail; returns its error."""
        try:
            await self.sync()
        except Exception as err:
            return err
        raise AssertionError("the sync did not fail")

    async def sync_through_worker(self) -> None:
        """One sync through the controller's queue and worker loop (which keeps the
        record of failing syncs); never raises what the sync raised."""
        self.controller.queue.add(self.key)
        await self.controller.runner.process_next_work_item()

    async def converge(self, rounds: int = 8) -> None:
        """Syncs and settles until a sync writes nothing; then forgets the record."""
        for _ in range(rounds):
            self.clear()
            await self.sync()
            writes = self.writes
            self.settle()
            if not writes:
                break
        else:
            raise AssertionError(f"no steady state after {rounds} syncs: {self.writes}")
        self.clear()

    def clear(self) -> None:
        """The caches catch up with the writes (:meth:`settle`), then the recorded
        actions, events and requeues are forgotten."""
        self.settle()
        self.forget()

    def forget(self) -> None:
        """Forgets the recorded actions, events and requeues; the caches stay as they
        are, as if no watch event had arrived yet."""
        self.client.clear()
        self._settled = 0
        self.recorder.recorded.clear()
        self.requeued.clear()
        self.requeued_after.clear()

    def step(self, seconds: float) -> None:
        self.clock.step(seconds)

    # -- what happened -----------------------------------------------------
    @property
    def actions(self) -> list[tuple[str, str, str]]:
        """Every call, as ``(verb, resource, name)``, in order."""
        return [a.short for a in self.client.actions]

    @property
    def writes(self) -> list[tuple[str, str, str]]:
        """The calls that write, in order."""
        return [a.short for a in self.client.actions if a.is_write()]

    def recorded(self, verb: str, resource: str, name: str | None = None) -> list[Action]:
        return [
            a
            for a in self.client.actions
            if a.verb == verb and a.resource == resource and name in (None, a.name)
        ]

    @property
    def events(self) -> list[tuple[str, str]]:
        """``(type, reason)`` of every event, in order."""
        return [(t, r) for t, r, _, _ in self.recorder.recorded]

    def event_messages(self, reason: str) -> list[str]:
        return [m for _, r, m, _ in self.recorder.recorded if r == reason]

    def event_objects(self, reason: str) -> list[Obj]:
        """The objects the events of ``reason`` were recorded on."""
        return [o for _, r, _, o in self.recorder.recorded if r == reason]

    def status_writes(self) -> list[Obj]:
        return [a.body["status"] for a in self.recorded("update", "mpijobs/status")]

    @property
    def status(self) -> Obj:
        """The status of the one status write of this record."""
        writes = self.status_writes()
        assert len(writes) == 1, f"{len(writes)} status writes"
        return writes[0]

    def conditions(self) -> list[tuple[str, str, str]]:
        """``(type, status, reason)`` of the written status's conditions."""
        return [(c["type"], c["status"], c.get("reason", "")) for c in self.status["conditions"]]

    def in_flight(self) -> set[str]:
        """Pod names whose creation is expected but not yet seen in the cache."""
        return set(self.controller.state.creations.unobserved(self.key, self.names("Pod")))

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float:
        value = self.controller.registry.get_sample_value(name, labels or {})
        return float(value or 0.0)


def _key(job: Obj) -> str:
    return f"{job['metadata']['namespace']}/{job['metadata']['name']}"


def _world(
    kind: str, job: Obj, controller: Any, client: RecordingClient, **parts: Any
) -> SyncWorld:
    world = SyncWorld(kind, _key(job), client, parts["clock"], controller, parts["recorder"])
    ctx = controller.syncer.ctx
    ctx.keygen = lambda: _KEYS
    ctx.requeue = world.requeued.append
    ctx.requeue_after = lambda key, seconds: world.requeued_after.append((key, seconds))
    world.add(job)
    return world


def gang(flag: str = "volcano") -> Any:
    """The options of ``--gang-scheduling=<flag>``."""
    return GangScheduling.from_flag(flag)


def kubeflow_world(job: Obj, *objects: Obj, gang_scheduling: Any = None) -> SyncWorld:
    """The Kubeflow controller with ``job`` and ``objects`` in its caches."""
    client, clock, registry = RecordingClient(), FakeClock(), CollectorRegistry()
    recorder = RecordingRecorder(clock, registry)
    controller = MPIJobController(
        client,  # type: ignore[arg-type]
        ControllerOptions(gang=gang_scheduling),
        recorder=recorder,
        clock=clock,
        registry=registry,
    )
    if controller.informers.pod_groups is not None:  # started on demand: synced here
        controller.informers.pod_groups.replace([], "0")
    world = _world("kubeflow", job, controller, client, clock=clock, recorder=recorder)
    return world.add(*objects)


def t9k_world(
    job: Obj, *objects: Obj, pod_groups_synced: bool = True, gang_scheduling: Any = None
) -> SyncWorld:
    """The T9k controller with ``job`` and ``objects`` in its caches. Its PodGroup cache
    starts on demand (an optional CRD); here it has synced already unless
    ``pod_groups_synced`` is False (the first job that needs one has yet to come)."""
    client, clock, registry = RecordingClient(), FakeClock(), CollectorRegistry()
    recorder = RecordingRecorder(clock, registry)
    controller = T9kMPIJobController(
        client,  # type: ignore[arg-type]
        ControllerOptions(gang=gang_scheduling),
        recorder=recorder,
        clock=clock,
        registry=registry,
    )
    if pod_groups_synced:
        controller.informers.pod_groups.replace([], "0")  # an empty first LIST
    if controller.informers.gang_pod_groups is not None:
        controller.informers.gang_pod_groups.replace([], "0")
    world = _world("t9k", job, controller, client, clock=clock, recorder=recorder)
    return world.add(*objects)


def own_recorder(kind: str) -> EventRecorder:
    """The recorder a controller of ``kind`` ("kubeflow" or "t9k") builds for itself when
    none is passed in (the process passes the Kubeflow one's to the T9k controller)."""
    cls = MPIJobController if kind == "kubeflow" else T9kMPIJobController
    controller = cls(
        RecordingClient(),  # type: ignore[arg-type]
        ControllerOptions(),
        clock=FakeClock(),
        registry=CollectorRegistry(),
    )
    recorder: EventRecorder = controller.recorder
    return recorder


def pod_names(world: SyncWorld, verb: str = "create") -> list[str]:
    return [a.name for a in world.recorded(verb, "pods")]


def _collection_matches(action: Action, obj: Obj) -> bool:
    """Whether a delete of a collection takes ``obj``: its label selector, and a field
    selector of ``status.phase!=...`` terms (all the operator sends)."""
    labels = obj["metadata"].get("labels") or {}
    if not parse_selector(action.options["label_selector"]).matches(labels):
        return False
    phase = (obj.get("status") or {}).get("phase")
    fields = action.options.get("field_selector")
    for term in fields.split(",") if fields else []:
        name, _, value = term.partition("!=")
        assert name == "status.phase", term
        if phase == value:
            return False
    return True


async def running_kubeflow_job(builder: MPIJobBuilder, replicas: int = 2) -> SyncWorld:
    """A job whose children exist, workers Ready and launcher pod running, Running
    written: the steady state of a job at work."""
    world = kubeflow_world(builder.workers(replicas).obj())
    await world.converge()
    for i in range(replicas):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    await world.converge()  # a launcher that waits for Ready workers comes now
    launcher = world.cached("Job", "pi-launcher")
    assert launcher is not None
    world.change(
        "Job", "pi-launcher", {"status": {"startTime": "2026-01-01T00:00:00Z", "active": 1}}
    )
    world.add(PodBuilder.of_job(launcher).running().obj())
    await world.converge()
    return world


async def running_t9k_job(builder: T9kJobBuilder) -> SyncWorld:
    """A T9k job whose every pod runs, Running written."""
    world = t9k_world(builder.obj())
    await world.converge()
    for name in world.names("Pod"):
        world.change("Pod", name, {"status": pod_status("Running", ready=True)})
    await world.converge()
    return world


def answer_existing(world: SyncWorld, resource: str, name: str, obj: Obj) -> None:
    """Answers the read of a child that a create found existing, as the operator makes
    it: a get by name, but a Secret is looked up with a list by name (the role grants
    no get on Secrets)."""
    if resource == "secrets":
        world.client.answer("list", resource, "", {"items": [obj]})
    else:
        world.client.answer("get", resource, name, obj)


def adoption(resource: str, name: str) -> list[tuple[str, str, str]]:
    """The actions that adopt an unlabelled child a create found existing: the read,
    then the labels written (a Secret with an update: no get or patch on Secrets)."""
    if resource == "secrets":
        return [("create", resource, name), ("list", resource, ""), ("update", resource, name)]
    return [("create", resource, name), ("get", resource, name), ("patch", resource, name)]


# -- a running Kubeflow job (failure tests) -----------------------------------
async def running(builder: MPIJobBuilder, replicas: int = 2) -> SyncWorld:
    """Children exist, workers Ready, the launcher pod runs, Running is written."""
    world = kubeflow_world(builder.workers(replicas).obj())
    await world.converge()
    for i in range(replicas):
        world.change("Pod", f"pi-worker-{i}", {"status": pod_status("Running", ready=True)})
    launcher = world.cached("Job", "pi-launcher")
    assert launcher is not None
    world.add(PodBuilder.of_job(launcher, "x7k2p").running().obj())
    await world.converge()
    world.clear()
    return world


def fail_worker(world: SyncWorld, index: int, exit_code: int = 1) -> None:
    failed = PodBuilder("x").failed(exit_code).obj()["status"]
    world.change("Pod", f"pi-worker-{index}", {"status": failed})


def conditions(world: SyncWorld) -> dict[str, tuple[str, str]]:
    return {t: (s, r) for t, s, r in world.conditions()}
