"""Runs on the real node side by side: every runnable example of examples/ at once for
test_examples.py, and the cases of the real-node tests (test_real_node_stacks.py,
test_sdk_real_node.py), each module's at once.

The runs' programs are tiny: each run waits on pod starts, sshd, DNS and (MPICH's
public image) its entry point, not on the CPU. So one operator watches a namespace per
run (:func:`cases_running`), and every run goes in a thread of its own as soon as the
node's memory holds it (the jobs request memory; their CPU requests are dropped by
``on_real_node``): all at once where the node holds them all, in waves where it does
not. Each run keeps what its test checks once it finished (the job, the launcher's pod
and log, the hostfile: a TTL may delete the job before its test reads them), or the
error that stopped it, named after its case with the namespace's pods, logs and
events. Each test waits for its own run.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

from examples_support import ROOT, apply, condition, docs, example_id, items, real_node_operator
from placement_support import job_hostfile
from real_node_support import RUN_TIMEOUT, explain, launcher_log, launcher_pod

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.nodeconfig import REAL_NODE_NAME, containerd_name
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess
from mpi_operator.api.quantity import parse_quantity

Obj = dict[str, Any]
T = TypeVar("T")
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
#: How often a run polls the API server.
POLL = 0.5
#: One run's deadline from its apply to its success: the runs share the node's cores
#: (two on CI), and while each run's start is mostly waiting, their MPI ranks (10^8
#: samples each job; Open MPI's ranks spin while they wait for a peer) compete for them.
#: All at once on this 2-core machine, under two other developers' builds, every run
#: ended 130-180 s after its apply; one at a time each takes RUN_TIMEOUT's share.
CONCURRENT_RUN_TIMEOUT = 2 * RUN_TIMEOUT
#: Runs started first: the longest (MPICH's public image spends most of its run resolving
#: the launcher's short host name; the data-parallel example trains for a while), so
#: that the runs queued behind them, where the node's memory makes waves, end early.
SLOWEST_FIRST = ("v2beta1/pi/pi-mpich.yaml", "v2beta1/mpi4py-sgd/sgd.yaml")


class Stopped(BaseException):
    """The module's runs were stopped (its fixture tore down) before this one ended: a
    BaseException, so that no poll (``wait_until`` retries on Exception) goes on."""


def raise_if_stopped(stop: threading.Event) -> Callable[[], None]:
    """For ``wait_for_condition``'s ``each_poll``: ends the wait once ``stop`` is set."""

    def check() -> None:
        if stop.is_set():
            raise Stopped

    return check


def is_t9k(job: Obj) -> bool:
    return str(job["apiVersion"]).startswith("batch.tensorstack.dev/")


def images(job: Obj) -> set[str]:
    specs = job["spec"].get("mpiReplicaSpecs") or {"Worker": job["spec"]["worker"]}
    return {c["image"] for r in specs.values() for c in r["template"]["spec"]["containers"]}


def _memory(resources: Obj | None) -> int:
    """A container's memory request in bytes (its limit where it gives no request, as
    the API server defaults it)."""
    resources = resources or {}
    value = (resources.get("requests") or {}).get("memory") or (resources.get("limits") or {}).get(
        "memory"
    )
    return int(parse_quantity(str(value)).as_fraction()) if value else 0


def pod_memory(spec: Obj) -> int:
    """What the scheduler counts for a pod: its containers' requests, or its largest
    init container's if larger."""
    main = sum(_memory(c.get("resources")) for c in spec.get("containers") or [])
    init = max((_memory(c.get("resources")) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def job_memory(job: Obj) -> int:
    """The memory requests of every pod of the job, all running at once."""
    specs = job["spec"].get("mpiReplicaSpecs") or {"Worker": job["spec"]["worker"]}
    total = sum(
        int(r.get("replicas", 1)) * pod_memory(r["template"]["spec"]) for r in specs.values()
    )
    if is_t9k(job):  # the T9k launcher: a pod like a worker's (the operator makes it)
        total += pod_memory(job["spec"]["worker"]["template"]["spec"])
    return total


def free_memory(cluster: LocalCluster) -> int:
    """The real node's allocatable memory less what its pods now request."""
    _, node = cluster.request("GET", f"/api/v1/nodes/{REAL_NODE_NAME}")
    allocatable = int(parse_quantity(node["status"]["allocatable"]["memory"]).as_fraction())
    pods = items(cluster, f"/api/v1/pods?fieldSelector=spec.nodeName={REAL_NODE_NAME}")
    used = sum(
        pod_memory(p["spec"])
        for p in pods
        if p["status"].get("phase") not in ("Succeeded", "Failed")
    )
    return allocatable - used


class MemoryBudget:
    """The node's free memory shared by the runs: a run takes its job's requests before
    applying it and gives them back once its pods are gone. A job larger than the
    whole budget runs alone (as it would one test at a time)."""

    def __init__(self, total: int, stop: threading.Event) -> None:
        self.total, self.free, self.stop = total, total, stop
        self._cond = threading.Condition()

    def _fits(self, amount: int) -> bool:
        return self.stop.is_set() or amount <= self.free or self.free == self.total

    def take(self, amount: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._fits(amount))
            if self.stop.is_set():
                raise Stopped
            self.free -= amount

    def give(self, amount: int) -> None:
        with self._cond:
            self.free += amount
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


@dataclass(frozen=True)
class CaseEnv:
    """Where a case runs: the cluster, its own namespace, the operator watching it."""

    cluster: LocalCluster
    namespace: str
    operator: OperatorProcess
    stop: threading.Event

    def check(self) -> None:
        """For each poll of the case's waits: ends the case once the module's runs are
        stopped, fails it once the operator exited."""
        if self.stop.is_set():
            raise Stopped
        assert self.operator.poll() is None, self.operator.output()[-4000:]


@dataclass
class Case(Generic[T]):
    """One run among others on the real node, in a namespace of its own: ``run`` does it
    there and returns what its test checks (:meth:`result`); an error that stops it
    names the case, with its namespace's pods, logs and events."""

    id: str
    run: Callable[[CaseEnv], T]
    #: What its pods request at once (:func:`job_memory` of its jobs).
    memory: int
    #: Cases of one group run one after another (their pods listen on one host port).
    serial: str | None = None
    #: Its pods may outlive it (``cleanPodPolicy: None``, say): their memory stays taken
    #: (rather than waiting for them to go).
    pods_stay: bool = False
    namespace: str = ""
    #: Seconds waiting for its turn (the node's memory, its group), then running.
    queued_s: float = 0.0
    ran_s: float = 0.0
    future: Future[T] = field(default_factory=Future)

    def result(self, timeout: float) -> T:
        return self.future.result(timeout=timeout)


@dataclass
class Finished:
    """What a run kept of its job once it finished."""

    job: Obj
    log: str
    launcher: Obj
    hostfile: str
    #: Whatever else the run saw on the way that its test checks.
    seen: Obj = field(default_factory=dict)


def keep(cluster: LocalCluster, ns: str, job: Obj, **seen: Any) -> Finished:
    """The finished ``job`` with its launcher's pod and log and its hostfile, read now: a
    TTL may delete them before its test reads them."""
    name = job["metadata"]["name"]
    return Finished(
        job=job,
        log=launcher_log(cluster, ns, name),
        launcher=launcher_pod(cluster, ns, name),
        hostfile=job_hostfile(cluster, ns, name),
        seen=seen,
    )


@dataclass
class ExampleRun:
    path: Path
    job: Obj
    #: The images the example names that the node's containerd lacks (then no run).
    missing: list[str]
    case: Case[Finished] | None = None

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    @property
    def namespace(self) -> str:
        assert self.case is not None
        return self.case.namespace

    def result(self, timeout: float) -> Finished:
        assert self.case is not None
        return self.case.result(timeout=timeout)


def node_images(cluster: LocalCluster) -> set[str]:
    """The images in the real node's containerd (k8s.io namespace)."""
    assert cluster.node is not None
    socket = str(cluster.node.layout.containerd_socket)
    listed = subprocess.run(
        ["ctr", "--address", socket, "-n", "k8s.io", "images", "ls", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return set(listed)


def _poll(stop: threading.Event, check: Callable[[], T | None], timeout: float, what: str) -> T:
    """Polls ``check`` every :data:`POLL` seconds until it returns a value; an
    AssertionError it raises fails at once, other errors (the API server's) are retried."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            result = check()
            if result is not None:
                return result
        except AssertionError:
            raise
        except Exception as err:
            last = err
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last else ""
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        if stop.wait(POLL):
            raise Stopped


def _finished(cluster: LocalCluster, ns: str, job: Obj) -> Obj | None:
    """The job once it Succeeded (Kubeflow) or its phase is Succeeded (T9k); an
    AssertionError once it failed."""
    name = job["metadata"]["name"]
    if is_t9k(job):
        _, body = cluster.request(
            "GET", f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{ns}/mpijobs/{name}"
        )
        phase = (body.get("status") or {}).get("phase")
        assert phase != "Failed", body.get("status")
        return body if phase == "Succeeded" else None
    _, body = cluster.request("GET", f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs/{name}")
    assert condition(body, "Failed") != "True", body.get("status")
    return body if condition(body, "Succeeded") == "True" else None


def _pods_gone(cluster: LocalCluster, ns: str) -> bool | None:
    """True once no pod of ``ns`` is Pending or Running (their memory is free)."""
    pods = items(cluster, f"/api/v1/namespaces/{ns}/pods")
    return True if all(p["status"].get("phase") in ("Succeeded", "Failed") for p in pods) else None


def run_job(job: Obj, env: CaseEnv) -> Finished:
    """Applies the job (Kubeflow's or T9k's) on the real node in the case's namespace,
    waits for its success and keeps what its test checks."""
    cluster, ns = env.cluster, env.namespace

    def finished() -> Obj | None:
        env.check()
        return _finished(cluster, ns, job)

    apply(cluster, ns, on_real_node(job))
    name = job["metadata"]["name"]
    done = _poll(env.stop, finished, CONCURRENT_RUN_TIMEOUT, f"{name} Succeeded")
    return keep(cluster, ns, done)


def _run_case(
    case: Case[T],
    env: CaseEnv,
    budget: MemoryBudget,
    groups: dict[str, threading.Lock],
) -> T:
    """The case once its group's previous cases ended and the node's memory holds it;
    its memory back once its pods are gone (the workers' deletion is the operator's
    cleanPodPolicy): the next run then fits where it counted on it."""
    cluster, ns = env.cluster, env.namespace
    start = time.monotonic()
    try:
        with groups[case.serial] if case.serial else nullcontext():
            budget.take(case.memory)
            kept = False
            try:
                applied = time.monotonic()
                case.queued_s = applied - start
                result = case.run(env)
                case.ran_s = time.monotonic() - applied
                if case.pods_stay:
                    kept = True
                else:
                    _poll(env.stop, lambda: _pods_gone(cluster, ns), 60, f"{case.id}'s pods gone")
                return result
            finally:
                if not kept:
                    budget.give(case.memory)
    except Stopped:
        raise
    except BaseException as err:
        raise AssertionError(f"{case.id} (in {ns}): {err!r}\n{explain(cluster, ns)}") from err


def _namespace_prefix(case_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", case_id.lower()).strip("-")[:40].strip("-")


#: Makes the operator of :func:`cases_running`: cluster, namespaces, its log's folder.
Operator = Callable[[LocalCluster, str, Path], AbstractContextManager[OperatorProcess]]


@contextmanager
def cases_running(
    cluster: LocalCluster,
    cases: Sequence[Case[Any]],
    tmp_path: Path,
    *,
    crds: Sequence[Path] = (),
    operator: Operator = real_node_operator,
) -> Iterator[None]:
    """Every case started on the real node, each in a thread and a namespace of its own,
    one operator (``operator``, after the ``crds`` are installed) watching them all;
    each test waits for its own case. Afterwards, whatever happened: the runs stopped,
    the operator ended and its log printed, the CRDs and namespaces deleted."""
    stop = threading.Event()
    with ExitStack() as stack:
        for case in cases:
            case.namespace = cluster.create_namespace(_namespace_prefix(case.id))
            stack.callback(cluster.delete_namespace, case.namespace)
        if crds:
            stack.enter_context(crds_installed(cluster, tuple(crds)))
        proc = stack.enter_context(
            operator(cluster, ",".join(c.namespace for c in cases), tmp_path)
        )
        budget = MemoryBudget(free_memory(cluster), stop)
        groups = {c.serial: threading.Lock() for c in cases if c.serial}
        pool = ThreadPoolExecutor(max_workers=max(len(cases), 1), thread_name_prefix="case")
        stack.callback(pool.shutdown, wait=True)
        stack.callback(budget.wake)
        stack.callback(stop.set)
        started = time.monotonic()
        for case in cases:
            env = CaseEnv(cluster, case.namespace, proc, stop)
            case.future = pool.submit(_run_case, case, env, budget, groups)
        yield
        print(
            f"on the real node: {len(cases)} runs in {time.monotonic() - started:.0f}s, "
            f"{budget.total / 2**30:.1f} GiB of the node's memory free for them"
        )


@contextmanager
def all_examples_running(
    cluster: LocalCluster, paths: list[Path], tmp_path: Path
) -> Iterator[dict[str, ExampleRun]]:
    """Every example of ``paths`` started on the real node (:func:`cases_running`), by
    example id; those whose images the node lacks are not run."""
    present = node_images(cluster)
    runs: dict[str, ExampleRun] = {}
    for path in sorted(paths, key=lambda p: example_id(p) not in SLOWEST_FIRST):
        (job,) = docs(path)
        missing = sorted(i for i in images(job) if containerd_name(i) not in present)
        run = runs[example_id(path)] = ExampleRun(path, job, missing)
        if not missing:
            run.case = Case(example_id(path), partial(run_job, job), job_memory(job))
    crds = [T9K_CRD] if any(is_t9k(r.job) for r in runs.values()) else []
    cases = [r.case for r in runs.values() if r.case is not None]
    with cases_running(cluster, cases, tmp_path, crds=crds):
        yield runs
