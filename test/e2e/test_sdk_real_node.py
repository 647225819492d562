"""The SDK's launcher logs for real: the pi example on the ``real`` shape's node, its
log followed through ``MPIJobClient.logs(follow=True)`` from the launcher's start to its
end, across the launcher's retries, then read again whole."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples_support import EXAMPLES, namespaced_operator

from devcluster import LocalCluster
from devcluster.demo import load_mpijob
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess
from mpi_operator.sdk import MPIJobClient, state

PI_RESULT = re.compile(r"pi is approximately 3\.14\d+ \(2 ranks")


@pytest.fixture
def real_ns(real_cluster: LocalCluster) -> Iterator[str]:
    name = real_cluster.create_namespace("sdk-logs")
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture
def operator(real_cluster: LocalCluster, real_ns: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    with namespaced_operator(real_cluster, real_ns, tmp_path) as proc:
        yield proc


def test_sdk_follows_the_launchers_log(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    client = MPIJobClient(real_ns, kubeconfig=real_cluster.kubeconfig)
    job = client.create(on_real_node(load_mpijob(EXAMPLES / "pi" / "pi.yaml")))
    followed = list(client.logs(job.name, follow=True, timeout=240))
    print("\n".join(followed))
    assert any(PI_RESULT.search(line) for line in followed), followed
    done = client.wait(job.name, "Succeeded", timeout=120)
    assert state(done) == "Succeeded"
    # Read again whole: the last attempt's log (the launcher Job may have retried an
    # mpirun that started before the workers' names resolved; follow shows every attempt).
    whole = list(client.logs(job.name))
    assert whole and followed[-len(whole) :] == whole
