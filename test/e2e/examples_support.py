"""Helpers of the e2e tests: examples made to finish on KWOK, a small pi MPIJob,
the real kubectl from async tests, operators under a ServiceAccount's token, a
stand-in for the volcano scheduler."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from devcluster import LocalCluster
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import T9K_INIT_IMAGE
from devcluster.sample_jobs import with_kwok_behaviour
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.client import KubeClient
from mpi_operator.controller.kubeflow.controller import MPIJobController
from mpi_operator.controller.options import ControllerOptions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "v2beta1"
#: Every example a user may run: the MPIJobs of examples/ and the SDK's script.
ALL_EXAMPLES = sorted(
    [*(ROOT / "examples").rglob("*.yaml"), *(ROOT / "examples" / "sdk").glob("*.py")]
)
_PLACEHOLDER = (
    "names a placeholder image (<registry>/...) that the user builds from its folder's "
    "Dockerfile and pushes: nothing to pull here"
)
#: Why an example cannot run on the real node as written (the same file, the image it
#: names); every other example runs there.
REAL_NODE_SKIPS = {
    "v2beta1/pi/pi-intel.yaml": (
        "mpioperator/mpi-pi:intel is built from Intel's apt repository (intel-oneapi-mpi), "
        "which this machine cannot reach, so no image built as the public one exists here "
        "(Intel MPI runs on the project's mpi-operator-python/mpi-pi:intel in the stack tests)"
    ),
    "v2beta1/tensorflow-benchmarks/tensorflow-benchmarks.yaml": (
        "needs NVIDIA GPUs (nvidia.com/gpu) and mpioperator/tensorflow-benchmarks, a "
        "TensorFlow and CUDA image that cannot be built here"
    ),
    "v2beta1/horovod/horovod.yaml": _PLACEHOLDER,
    "v2beta1/horovod/horovod-elastic.yaml": _PLACEHOLDER,
    "v2beta1/deepspeed/deepspeed.yaml": f"needs NVIDIA GPUs (nvidia.com/gpu), and {_PLACEHOLDER}",
    "v2beta1/nccl-tests/nccl-tests.yaml": f"needs NVIDIA GPUs (nvidia.com/gpu), and {_PLACEHOLDER}",
    "v2beta1/mpi4py-sgd/elastic.yaml": (
        "runs as written in test_elastic_real_node.py, which scales it up and down while it "
        "trains and checks the driver's relaunches and the result"
    ),
    "kueue/mpijob-multikueue.yaml": (
        "is dispatched by Kueue's MultiKueue (managedBy kueue.x-k8s.io/multikueue), which "
        "a cluster without Kueue and a worker cluster leaves alone by design; the Kueue "
        "suite applies it as written, with both"
    ),
    "kueue/multikueue-manager.yaml": (
        "holds Kueue's own objects, no MPIJob; the Kueue suite applies it as written"
    ),
    "kueue/multikueue-worker.yaml": (
        "holds Kueue's own objects, no MPIJob; the Kueue suite applies it as written"
    ),
    "sdk/pi.py": (
        "creates v2beta1/pi/pi.yaml unchanged through the SDK, and the real node takes only "
        "pods with its toleration, which the script cannot add; pi.yaml itself runs on the "
        "real node, and the script runs as it is on KWOK's nodes"
    ),
}


def example_id(path: Path) -> str:
    return str(path.relative_to(ROOT / "examples"))


DEPLOY = ROOT / "deploy" / "v2beta1" / "mpi-operator.yaml"

Obj = dict[str, Any]


def docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kwok_example(path: Path) -> Obj:
    """The example's MPIJob with its launcher set to exit 0 after 3s on the fake nodes."""
    return with_kwok_behaviour(load_mpijob(path), launcher_runs_for="3s")


async def kubectl_async(cluster: LocalCluster, *args: str, input: str | None = None) -> str:
    """Runs the real kubectl in a thread, so a controller's event loop keeps going."""
    result = await asyncio.to_thread(cluster.kubectl, *args, input=input)
    return str(result.stdout)


async def kubectl_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(await kubectl_async(cluster, *args, "-o", "json"))


def apply(cluster: LocalCluster, namespace: str, obj: Obj) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(obj))


def get(cluster: LocalCluster, path: str) -> Obj | None:
    status, body = cluster.request("GET", path)
    return body if status == 200 else None


def mpijob(cluster: LocalCluster, namespace: str, name: str) -> Obj:
    body = get(cluster, f"/apis/kubeflow.org/v2beta1/namespaces/{namespace}/mpijobs/{name}")
    assert body is not None
    return body


def condition(job: Obj, kind: str) -> str:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return str(c["status"])
    return ""


def kubectl_table(cluster: LocalCluster, *args: str) -> list[dict[str, str]]:
    """Rows of ``kubectl get <args>``'s table by column name; an empty cell is "" (columns
    are cut where the header's names start, as kubectl pads them)."""
    lines = cluster.kubectl("get", *args).stdout.splitlines()
    names = lines[0].split()
    starts = [
        lines[0].index(f"{name} " if i < len(names) - 1 else name) for i, name in enumerate(names)
    ]
    ends = [*starts[1:], None]
    return [
        {name: line[a:b].strip() for name, a, b in zip(names, starts, ends, strict=True)}
        for line in lines[1:]
    ]


def items(cluster: LocalCluster, path: str) -> list[Obj]:
    body = get(cluster, path)
    return list((body or {}).get("items") or [])


def start_operator(
    tmp_path: Path, kubeconfig: Path, *extra: str, name: str = "operator"
) -> OperatorProcess:
    proc = OperatorProcess(
        [f"--kubeConfig={kubeconfig}", "--kube-api-qps=50", "--kube-api-burst=100", *extra],
        tmp_path / f"{name}.log",
    )
    proc.start()
    try:

        def leading() -> bool:
            assert proc.poll() is None, proc.output()[-4000:]
            return "mpi_operator_is_leader 1.0" in proc.metrics()

        wait_until(leading, 60, "the operator to lead")
    except BaseException:
        proc.kill()
        print(proc.output()[-6000:])
        raise
    return proc


def stop_operator(proc: OperatorProcess) -> None:
    """SIGTERM, and the process must exit 0 within 20 s; it is killed in any case."""
    proc.signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=20) == 0, proc.output()[-4000:]
    finally:
        proc.kill()


@contextmanager
def real_node_operator(
    cluster: LocalCluster, namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    """The operator for the real node's tests, watching only ``namespace`` (or the
    comma-separated namespaces, its Lease in the first); its T9k launchers' init
    container runs the node's t9k-init image (busybox cannot be fetched here). Killed
    afterwards, its log printed."""
    proc = start_operator(
        tmp_path,
        cluster.kubeconfig,
        f"--namespace={namespace}",
        f"--lock-namespace={namespace.split(',')[0]}",
        f"--t9k-init-image={T9K_INIT_IMAGE}",
    )
    try:
        yield proc
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


@contextmanager
def namespaced_operator(
    cluster: LocalCluster, namespace: str, tmp_path: Path, *flags: str
) -> Iterator[OperatorProcess]:
    """The operator as a process, watching only ``namespace`` (or the comma-separated
    namespaces, its Lease in the first), with ``flags`` added, stopped cleanly
    afterwards; its log is printed at the end."""
    proc = start_operator(
        tmp_path,
        cluster.kubeconfig,
        f"--namespace={namespace}",
        f"--lock-namespace={namespace.split(',')[0]}",
        *flags,
    )
    try:
        yield proc
        stop_operator(proc)
    finally:
        proc.kill()
        print(f"--- operator log ---\n{proc.output()[-6000:]}")


def wait_for_condition(
    cluster: LocalCluster,
    namespace: str,
    name: str,
    kind: str,
    proc: OperatorProcess,
    timeout: float = 90,
    each_poll: Any = None,
) -> Obj:
    def check() -> Obj | None:
        assert proc.poll() is None, proc.output()[-4000:]
        if each_poll is not None:
            each_poll()
        job = mpijob(cluster, namespace, name)
        assert condition(job, "Failed") != "True", json.dumps(job.get("status"))
        return job if condition(job, kind) == "True" else None

    result: Obj = wait_until(check, timeout, f"mpijob {name} {kind}")
    return result


def service_account_kubeconfig(
    cluster: LocalCluster, namespace: str, account: str, path: Path
) -> Path:
    """A kubeconfig that authenticates with a fresh token of the ServiceAccount."""
    return cluster.token_kubeconfig(namespace, account, path)


class VolcanoStandIn:
    """Binds the pods handed to the ``volcano`` scheduler, as a gang: nothing until the
    job's PodGroup exists and at least its minMember pods wait, then all of them.
    There is no volcano here; this only plays its part for the operator's pods."""

    def __init__(self, cluster: LocalCluster, namespace: str, node: str = "kwok-node-0") -> None:
        self.cluster, self.namespace, self.node = cluster, namespace, node
        self.bound: list[str] = []
        """The names of the pods bound, in order (a pod recreated under the same name, as
        after a restart, is bound again and listed again)."""
        self._bound_uids: set[str] = set()
        self.groups: dict[str, Obj] = {}
        """The PodGroups seen (the operator deletes them when the job ends)."""
        self.group_uids: dict[str, set[str]] = {}
        """Every uid seen under each PodGroup's name (one, unless it was recreated)."""

    def __call__(self) -> None:
        ns = self.namespace
        groups = items(
            self.cluster, f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
        )
        waiting = [
            p
            for p in items(self.cluster, f"/api/v1/namespaces/{ns}/pods")
            if p["spec"].get("schedulerName") == "volcano" and not p["spec"].get("nodeName")
        ]
        for group in groups:
            name = group["metadata"]["name"]
            self.groups[name] = group
            self.group_uids.setdefault(name, set()).add(group["metadata"]["uid"])
            members = [
                p
                for p in waiting
                if (p["metadata"].get("annotations") or {}).get("scheduling.k8s.io/group-name")
                == name
            ]
            if not members or len(members) < int(group["spec"].get("minMember") or 0):
                continue
            if any(p["metadata"]["uid"] in self._bound_uids for p in members):
                continue
            for pod in members:
                binding = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": pod["metadata"]["name"]},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
                }
                status, body = self.cluster.request(
                    "POST",
                    f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/binding",
                    binding,
                )
                assert status in (200, 201), body
                self.bound.append(pod["metadata"]["name"])
                self._bound_uids.add(pod["metadata"]["uid"])


@asynccontextmanager
async def in_process_operator(
    cluster: LocalCluster, namespace: str, gang: GangScheduling | None = None
) -> AsyncIterator[MPIJobController]:
    """The controller in this event loop, watching ``namespace`` (with ``gang``
    scheduling, as ``--gang-scheduling`` gives it); stopped on exit."""
    client = await KubeClient.from_kubeconfig(cluster.kubeconfig, qps=50, burst=100)
    options = ControllerOptions(namespace=namespace, gang=gang)
    controller = MPIJobController(client, options, registry=CollectorRegistry())
    await controller.start(sync_timeout=30)
    try:
        yield controller
    finally:
        await controller.stop(drain_seconds=2)
        await client.close()
