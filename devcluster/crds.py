"""CRDs installed for a while: for tests that need a kind the cluster does not serve
by default (the T9k MPIJob and its scheduler's PodGroup)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from .waiting import wait_for

if TYPE_CHECKING:
    from .cluster import LocalCluster


@contextlib.contextmanager
def crds_installed(
    cluster: LocalCluster, paths: Sequence[Path], timeout: float = 60
) -> Iterator[list[str]]:
    """Applies the CRD files and waits until they are Established; yields the names of
    those that were not installed before, and deletes only those on exit.

    kubectl caches discovery, so after a deletion its cache is refreshed until the
    deleted groups are gone from it; else a later bare ``kubectl get mpijob`` would
    still resolve to a deleted CRD of the same plural.
    """
    crds = [d for p in paths for d in yaml.safe_load_all(p.read_text()) if d]
    groups = {c["metadata"]["name"]: c["spec"]["group"] for c in crds}
    new = [name for name in groups if cluster.kubectl("get", "crd", name, check=False).returncode]
    for path in paths:
        cluster.kubectl("apply", "-f", str(path))
    for name in groups:
        cluster.kubectl(
            "wait", "--for=condition=Established", f"crd/{name}", f"--timeout={timeout:g}s"
        )
    try:
        yield new
    finally:
        for name in new:
            cluster.kubectl("delete", "crd", name, "--ignore-not-found", "--wait=true")
        for group in sorted({groups[name] for name in new}):
            wait_for(
                functools.partial(_undiscovered, cluster, group),
                timeout=30,
                what=f"kubectl discovery without {group}",
            )


def _undiscovered(cluster: LocalCluster, group: str) -> bool:
    """Whether kubectl's (refreshed) discovery lists no resource of ``group``."""
    out = cluster.kubectl("api-resources", f"--api-group={group}", "-o", "name")
    return not out.stdout.strip()
