"""The elastic example (examples/v2beta1/mpi4py-sgd/elastic.yaml) on the real node, scaled
with the real kubectl while it trains: the driver in the launcher sees the workers come
and go through discover_hosts.sh, starts mpirun again on the new hosts from its last
checkpoint, and the training ends with the checksum of one uninterrupted run.

The example runs as written (only placed on the real node): sixty epochs of a second,
time for two changes of the host set while it trains."""

from __future__ import annotations

import re
from pathlib import Path

from examples_support import EXAMPLES, apply, docs, real_node_operator, wait_for_condition
from real_node_support import explain, launcher_log, sgd_module

from devcluster import LocalCluster
from devcluster.sample_jobs import on_real_node
from devcluster.testing import wait_until

EPOCHS = 60  # the example's --epochs
LAUNCH = re.compile(r"^driver: launching (\d+) ranks from epoch (\d+)", re.M)


def _launches(cluster: LocalCluster, ns: str) -> list[tuple[int, int]]:
    log = launcher_log(cluster, ns, "mpi4py-elastic")
    return [(int(n), int(epoch)) for n, epoch in LAUNCH.findall(log)]


def _wait_launch(cluster: LocalCluster, ns: str, ranks: int, after: int, within: float) -> None:
    """Until the driver has launched ``ranks`` ranks from an epoch past ``after``."""
    try:
        wait_until(
            lambda: any(n == ranks and e > after for n, e in _launches(cluster, ns)),
            within,
            f"a launch of {ranks} ranks from an epoch past {after}",
            interval=1,
        )
    except BaseException:
        print(explain(cluster, ns))
        raise


def _epoch(cluster: LocalCluster, ns: str) -> int:
    log = launcher_log(cluster, ns, "mpi4py-elastic")
    done = [int(e) for e in re.findall(r"^epoch (\d+) loss", log, re.M)]
    return max(done, default=-1)


def test_an_elastic_job_scaled_while_it_trains_ends_with_an_uninterrupted_runs_result(
    real_cluster: LocalCluster, real_ns: str, tmp_path: Path
) -> None:
    ns = real_ns
    (job,) = docs(EXAMPLES / "mpi4py-sgd" / "elastic.yaml")
    with real_node_operator(real_cluster, ns, tmp_path) as proc:
        apply(real_cluster, ns, on_real_node(job))
        _wait_launch(real_cluster, ns, ranks=2, after=-1, within=180)
        wait_until(lambda: _epoch(real_cluster, ns) >= 2, 120, "epoch 2 trained", interval=1)

        # Grown: a third worker joins, and training goes on on three ranks.
        real_cluster.kubectl("scale", "mpijob/mpi4py-elastic", "-n", ns, "--replicas=3")
        _wait_launch(real_cluster, ns, ranks=3, after=0, within=120)
        grown_at = max(epoch for n, epoch in _launches(real_cluster, ns) if n == 3)

        # Shrunk: down to one worker, from a later checkpoint.
        real_cluster.kubectl("scale", "mpijob/mpi4py-elastic", "-n", ns, "--replicas=1")
        _wait_launch(real_cluster, ns, ranks=1, after=grown_at - 1, within=120)

        try:
            wait_for_condition(real_cluster, ns, "mpi4py-elastic", "Succeeded", proc, timeout=300)
        except BaseException:
            print(explain(real_cluster, ns))
            raise
        log = launcher_log(real_cluster, ns, "mpi4py-elastic")

    launches = [n for n, _ in _launches(real_cluster, ns)]
    assert launches[0] == 2 and 3 in launches and launches[-1] == 1, log
    assert f"driver: trained {EPOCHS} epochs" in log, log
    # Each epoch was trained (the last run's epochs at least once; a run stopped mid-epoch
    # repeats that epoch from the checkpoint before it).
    epochs = {int(e) for e in re.findall(r"^epoch (\d+) loss", log, re.M)}
    assert epochs == set(range(EPOCHS)), sorted(epochs)
    sgd = sgd_module()
    x, y = sgd.dataset()
    single, _ = sgd.train(x, y, len(y), epochs=EPOCHS)
    checksum = re.search(r"^weights checksum (\S+)$", log, re.M)
    assert checksum and abs(float(checksum[1]) - sgd.checksum(single)) < 1e-8, log
