"""Fixtures of the real-node tests (test_real_node*.py): a fresh namespace on the
session's real cluster, and an operator watching only it (its T9k launchers' init
container on the node's ``t9k-init`` image: busybox cannot be fetched here)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples_support import real_node_operator

from devcluster import LocalCluster
from devcluster.testing import OperatorProcess


@pytest.fixture
def real_ns(real_cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    prefix = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).removeprefix("test-")
    name = real_cluster.create_namespace(prefix[:30].strip("-"))
    yield name
    real_cluster.delete_namespace(name)


@pytest.fixture
def operator(real_cluster: LocalCluster, real_ns: str, tmp_path: Path) -> Iterator[OperatorProcess]:
    with real_node_operator(real_cluster, real_ns, tmp_path) as proc:
        yield proc
