"""Every runnable example of examples/ at once on the real node, for test_examples.py.

The examples' programs are tiny: each run waits on pod starts, sshd, DNS and (MPICH's
public image) its entry point, not on the CPU. So one operator watches a namespace per
example, and every example is applied in a thread of its own as soon as the node's
memory holds it (the examples request memory; their CPU requests are dropped by
``on_real_node``): all at once where the node holds them all, in waves where it does
not. Each run keeps what its test checks once it finished (the job, the launcher's pod
and log, the hostfile: a TTL may delete the job before its test reads them), or the
error that stopped it, named after the example with the namespace's pods, logs and
events. Each test waits for its own run.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

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

    @contextmanager
    def taken(self, amount: int) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: self._fits(amount))
            if self.stop.is_set():
                raise Stopped
            self.free -= amount
        try:
            yield
        finally:
            with self._cond:
                self.free += amount
                self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


@dataclass
class Finished:
    """What a run kept of its job once it finished."""

    job: Obj
    log: str
    launcher: Obj
    hostfile: str
    #: Seconds waiting for the node's memory, then from applying it to its success.
    queued_s: float
    ran_s: float


@dataclass
class ExampleRun:
    path: Path
    job: Obj
    namespace: str
    #: The images the example names that the node's containerd lacks (then no run).
    missing: list[str]
    future: Future[Finished] = field(default_factory=Future)

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    def result(self, timeout: float) -> Finished:
        return self.future.result(timeout=timeout)


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


def _finished(cluster: LocalCluster, run: ExampleRun, proc: OperatorProcess) -> Obj | None:
    """The job once it Succeeded (Kubeflow) or its phase is Succeeded (T9k); an
    AssertionError once it failed or the operator exited."""
    assert proc.poll() is None, f"the operator exited: {proc.output()[-4000:]}"
    ns, name = run.namespace, run.name
    if is_t9k(run.job):
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


def run_example(
    cluster: LocalCluster,
    run: ExampleRun,
    proc: OperatorProcess,
    budget: MemoryBudget,
    stop: threading.Event,
) -> Finished:
    """Applies the example in its namespace once the node's memory holds it, waits for
    its success and keeps what its test checks; any error names the example and says
    what its namespace held."""
    ns, name = run.namespace, run.name
    start = time.monotonic()
    try:
        with budget.taken(job_memory(run.job)):
            applied = time.monotonic()
            apply(cluster, ns, on_real_node(run.job))
            done = _poll(
                stop,
                lambda: _finished(cluster, run, proc),
                CONCURRENT_RUN_TIMEOUT,
                f"{name} Succeeded",
            )
            finished = Finished(
                job=done,
                log=launcher_log(cluster, ns, name),
                launcher=launcher_pod(cluster, ns, name),
                hostfile=job_hostfile(cluster, ns, name),
                queued_s=applied - start,
                ran_s=time.monotonic() - applied,
            )
            # Its memory back once its pods are gone (the workers' deletion is the
            # operator's cleanPodPolicy): the next run then fits where it counted on it.
            _poll(stop, lambda: _pods_gone(cluster, ns), 60, f"{name}'s pods gone")
            return finished
    except Stopped:
        raise
    except BaseException as err:
        raise AssertionError(
            f"{example_id(run.path)} ({name} in {ns}): {err!r}\n{explain(cluster, ns)}"
        ) from err


@contextmanager
def all_examples_running(
    cluster: LocalCluster, paths: list[Path], tmp_path: Path
) -> Iterator[dict[str, ExampleRun]]:
    """Every example of ``paths`` started on the real node (a namespace each, one
    operator watching them all), by example id. Afterwards, whatever happened: the runs
    stopped, the operator killed and its log printed, the namespaces deleted."""
    present = node_images(cluster)
    stop = threading.Event()
    runs: dict[str, ExampleRun] = {}
    with ExitStack() as stack:
        for path in sorted(paths, key=lambda p: example_id(p) not in SLOWEST_FIRST):
            (job,) = docs(path)
            ns = cluster.create_namespace(f"example-{job['metadata']['name']}"[:40])
            stack.callback(cluster.delete_namespace, ns)
            missing = sorted(i for i in images(job) if containerd_name(i) not in present)
            runs[example_id(path)] = ExampleRun(path, job, ns, missing)
        if any(is_t9k(r.job) for r in runs.values()):
            stack.enter_context(crds_installed(cluster, (T9K_CRD,)))
        proc = stack.enter_context(
            real_node_operator(cluster, ",".join(r.namespace for r in runs.values()), tmp_path)
        )
        budget = MemoryBudget(free_memory(cluster), stop)
        pool = ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="example")
        stack.callback(pool.shutdown, wait=True)
        stack.callback(budget.wake)
        stack.callback(stop.set)
        started = time.monotonic()
        for run in runs.values():
            if not run.missing:
                run.future = pool.submit(run_example, cluster, run, proc, budget, stop)
        yield runs
        print(
            f"examples on the real node: {len(runs)} in {time.monotonic() - started:.0f}s, "
            f"{budget.total / 2**30:.1f} GiB of the node's memory free for them"
        )
