"""The reference operator (kubeflow/mpi-operator v0.8.2, built by
hack/install-reference-operator.sh into the cache) in place of ours, for suites that
can run against either: ``MPI_OPERATOR_UNDER_TEST=reference .venv/bin/pytest
test/integration/kueue`` runs the Kueue suite against it. A helper for comparing the
two by hand, never set in CI; unset (or ``ours``), the suites run our operator.

The reference serves its health check on :8080 whatever its flags say, so one runs at
a time on a host; a test that needs two skips under it."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bench.sidebyside.operators import READY_MARKERS, REFERENCE, reference_binary
from devcluster.procs import Process

UNDER_TEST = os.environ.get("MPI_OPERATOR_UNDER_TEST", "ours")
HEALTH_PORT = 8080


def reference_under_test() -> bool:
    return UNDER_TEST == REFERENCE


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@asynccontextmanager
async def reference_operators(
    cluster: Any, namespace: str, workdir: Path
) -> AsyncIterator[Callable[..., Awaitable[None]]]:
    """A function starting the reference operator on ``cluster``, watching ``namespace``
    (its leader lock there too); it returns once the operator's workers run, and every
    one started is stopped on exit, whatever happened."""
    running: list[Process] = []

    async def start(**_: Any) -> None:
        if running or _port_taken(HEALTH_PORT):
            pytest.skip(f"the reference operator needs port {HEALTH_PORT}, which is taken")
        log = workdir / f"reference-operator-{len(running)}.log"
        args = [
            str(reference_binary()),
            "--kubeConfig", str(cluster.kubeconfig),
            "--namespace", namespace,
            "--lock-namespace", namespace,
        ]  # fmt: skip
        proc = Process("reference-operator", args, log)
        running.append(proc)
        proc.start()
        deadline = time.monotonic() + 60
        while READY_MARKERS[REFERENCE].decode() not in (log.read_text() if log.exists() else ""):
            if not proc.alive() or time.monotonic() > deadline:
                pytest.fail(f"the reference operator did not start:\n{proc.tail()}")
            await asyncio.sleep(0.2)

    try:
        yield start
    finally:
        for proc in running:
            proc.stop()
