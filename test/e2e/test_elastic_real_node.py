"""The elastic example (examples/v2beta1/mpi4py-sgd/elastic.yaml) as written, on the real
node, scaled with the real kubectl and losing a worker while it trains (the node
cordoned while the worker is replaced): the driver in
the launcher sees the workers come and go through discover_hosts.sh and starts mpirun
again on the new hosts from its last checkpoint; the job stays Running through the
loss, and the training ends with every epoch done once and the checksum of one
uninterrupted run."""

from __future__ import annotations

import itertools
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

from examples_support import (
    EXAMPLES,
    apply,
    docs,
    items,
    real_node_operator,
    wait_for_condition,
)
from real_node_support import container_pid, explain, launcher_log, sgd_module

from devcluster import LocalCluster
from devcluster.nodeconfig import REAL_NODE_NAME
from devcluster.sample_jobs import on_real_node
from devcluster.testing import wait_until

NAME = "mpi4py-elastic"
EXAMPLE = EXAMPLES / "mpi4py-sgd" / "elastic.yaml"
LAUNCH = re.compile(r"^driver: launching (\d+) ranks from epoch (\d+)", re.M)
EPOCH = re.compile(r"^epoch (\d+) loss (\S+) on (\d+) ranks$", re.M)
RANK = re.compile(r"^rank (\d+) of (\d+) on (\S+)$", re.M)


def _epochs(log: str) -> list[tuple[int, float, int]]:
    return [(int(e), float(loss), int(n)) for e, loss, n in EPOCH.findall(log)]


def _log(cluster: LocalCluster, ns: str) -> str:
    return launcher_log(cluster, ns, NAME)


def _wait(
    cluster: LocalCluster, ns: str, check: Callable[[str], bool], within: float, what: str
) -> str:
    """Until ``check`` holds for the launcher's log; that log."""

    def log_if_done() -> str | None:
        log = _log(cluster, ns)
        return log if check(log) else None

    try:
        return str(wait_until(log_if_done, within, what, interval=1))
    except BaseException:
        print(explain(cluster, ns))
        raise


def _trained_on(ranks: int, after: int) -> Callable[[str], bool]:
    """An epoch past ``after`` trained on ``ranks`` ranks."""
    return lambda log: any(n == ranks and e > after for e, _, n in _epochs(log))


def _last_epoch(log: str) -> int:
    return max((e for e, _, _ in _epochs(log)), default=-1)


def _phase(cluster: LocalCluster, ns: str) -> dict[str, str]:
    (job,) = items(cluster, f"/apis/kubeflow.org/v2beta1/namespaces/{ns}/mpijobs")
    return {c["type"]: c["status"] for c in (job.get("status") or {}).get("conditions") or []}


def test_an_elastic_job_scaled_and_losing_a_worker_trains_every_epoch_once(
    real_cluster: LocalCluster, real_ns: str, tmp_path: Path
) -> None:
    ns = real_ns
    (job,) = docs(EXAMPLE)
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    epochs = int(launcher["args"][launcher["args"].index("--epochs") + 1])
    with real_node_operator(real_cluster, ns, tmp_path) as proc:
        apply(real_cluster, ns, on_real_node(job))
        log = _wait(real_cluster, ns, _trained_on(2, 1), 180, "epochs on 2 ranks")

        # Grown to four: the world size changes, and later epochs run on four ranks,
        # one in each worker pod.
        real_cluster.kubectl("scale", f"mpijob/{NAME}", "-n", ns, "--replicas=4")
        log = _wait(real_cluster, ns, _trained_on(4, _last_epoch(log)), 120, "epochs on 4 ranks")
        last_launch = log[log.rindex("driver: launching 4 ranks") :]
        hosts = {host for _, size, host in RANK.findall(last_launch) if size == "4"}
        assert hosts == {f"{NAME}-worker-{i}" for i in range(4)}, last_launch

        # A worker killed: the job stays Running, trains on three, then on four again
        # once the operator's new worker runs. The node is cordoned meanwhile, so that
        # the new worker waits to be placed (as on a cluster short of room); here it
        # would be back within seconds, before the driver saw it gone.
        pods = items(real_cluster, f"/api/v1/namespaces/{ns}/pods")
        (victim,) = [p for p in pods if p["metadata"]["name"] == f"{NAME}-worker-2"]
        killed_at = _last_epoch(log)
        real_cluster.kubectl("cordon", REAL_NODE_NAME)
        try:
            os.kill(container_pid(real_cluster, victim), signal.SIGKILL)
            log = _wait(real_cluster, ns, _trained_on(3, killed_at), 150, "epochs on 3 ranks")
            assert _phase(real_cluster, ns).get("Running") == "True", _phase(real_cluster, ns)
        finally:
            real_cluster.kubectl("uncordon", REAL_NODE_NAME)
        three_at = max(e for e, _, n in _epochs(log) if n == 3)
        _wait(real_cluster, ns, _trained_on(4, three_at), 150, "epochs on 4 ranks again")

        try:
            wait_for_condition(real_cluster, ns, NAME, "Succeeded", proc, timeout=300)
        except BaseException:
            print(explain(real_cluster, ns))
            raise
        log = _log(real_cluster, ns)

    done = _epochs(log)
    assert [e for e, _, _ in done] == list(range(epochs)), log  # each epoch once, in order
    losses = [loss for _, loss, _ in done]
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    sizes = [n for _, _, n in done]
    assert sizes[0] == 2 and 4 in sizes and 3 in sizes and sizes[-1] == 4, sizes
    assert f"driver: trained {epochs} epochs" in log, log
    sgd = sgd_module()
    x, y = sgd.dataset()
    single, _ = sgd.train(x, y, len(y), epochs=epochs)
    checksum = re.search(r"^weights checksum (\S+)$", log, re.M)
    assert checksum and abs(float(checksum[1]) - sgd.checksum(single)) < 1e-8, log
