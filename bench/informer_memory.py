"""Benchmark: memory of a label-selected pod informer among 10,000 pods.

Creates 10,000 Pods in a fresh namespace, 500 of which carry the label
``bench.mpi-operator.io/selected=yes``, then measures, in a separate child
process (so nothing the parent did pollutes the figure):

1. RSS after syncing an informer whose selector matches no pod (empty cache:
   the interpreter, kubernetes_asyncio, aiohttp and our code all loaded and
   exercised);
2. RSS after syncing the informer with the real selector (500 pods cached).

The claim under test: the cache holds exactly 500 pods and RSS grows by less
than 10 MiB - server-side label selection means the 9,500 other pods never
reach the process, and ``managedFields`` are dropped before caching.

Usage::

    python -m bench.informer_memory                # uses $KUBECONFIG
    python -m bench.informer_memory --local        # starts an api-only local cluster
    python -m bench.informer_memory --pods 2000 --selected 100

Pods stay Pending (no scheduler in the api-only cluster), which is fine.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from mpi_operator.client.informer import SharedInformer
from mpi_operator.client.kubeapi import NAMESPACES, PODS, KubeClient

LABEL = "bench.mpi-operator.io/selected"
LIMIT_MIB = 10.0


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def pod(name: str, selected: bool) -> dict[str, Any]:
    labels = {"app": "bench", LABEL: "yes" if selected else "no"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.example/mpi-worker:1.0",
                    "command": ["sleep", "infinity"],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }


async def populate(kube: KubeClient, namespace: str, total: int, selected: int) -> float:
    await kube.create(
        NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    sem = asyncio.Semaphore(32)
    every = max(total // selected, 1) if selected else total + 1
    start = time.monotonic()

    async def one(i: int) -> None:
        async with sem:
            sel = selected > 0 and i % every == 0 and i // every < selected
            await kube.create(PODS, namespace, pod(f"pod-{i:05d}", sel))

    await asyncio.gather(*(one(i) for i in range(total)))
    return time.monotonic() - start


async def cleanup(kube: KubeClient, namespace: str) -> None:
    await kube.request("DELETE", PODS.path(namespace), request_timeout=600)
    try:
        await kube.request("DELETE", NAMESPACES.path(name=namespace))
    except Exception as err:
        print(f"note: namespace {namespace} not deleted: {err}", file=sys.stderr)


async def child(kubeconfig: str, namespace: str) -> dict[str, Any]:
    """Runs in the measuring process; prints one JSON line."""
    kube = await KubeClient.from_kubeconfig(kubeconfig, qps=-1)
    try:
        empty = SharedInformer(kube, PODS, namespace=namespace, label_selector=f"{LABEL}=none")
        empty.start()
        assert await empty.wait_for_sync(120)
        await empty.stop()
        gc.collect()
        base = rss_kib()

        t0 = time.monotonic()
        inf = SharedInformer(kube, PODS, namespace=namespace, label_selector=f"{LABEL}=yes")
        inf.start()
        assert await inf.wait_for_sync(120)
        sync_s = time.monotonic() - t0
        gc.collect()
        after = rss_kib()
        cached = len(inf.indexer)
        await inf.stop()
        return {
            "rss_empty_kib": base,
            "rss_cached_kib": after,
            "growth_mib": (after - base) / 1024,
            "cached": cached,
            "sync_seconds": sync_s,
        }
    finally:
        await kube.close()


def measure(kubeconfig: str, namespace: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.informer_memory", "--child", kubeconfig, namespace],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


async def run(kubeconfig: str, total: int, selected: int, keep: bool) -> dict[str, Any]:
    namespace = f"bench-informer-{uuid.uuid4().hex[:6]}"
    kube = await KubeClient.from_kubeconfig(kubeconfig, qps=-1)
    try:
        created_s = await populate(kube, namespace, total, selected)
        print(f"created {total} pods ({selected} selected) in {created_s:.1f}s", file=sys.stderr)
        result = await asyncio.to_thread(measure, kubeconfig, namespace)
        result.update(pods=total, selected=selected, create_seconds=created_s)
        return result
    finally:
        if not keep:
            await cleanup(kube, namespace)
        await kube.close()


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(asyncio.run(child(sys.argv[2], sys.argv[3]))))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    p.add_argument("--local", action="store_true", help="start an api-only local cluster")
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--selected", type=int, default=500)
    p.add_argument("--keep", action="store_true", help="leave the pods in place")
    args = p.parse_args()

    cluster = None
    kubeconfig = args.kubeconfig
    if args.local or not kubeconfig:
        from devcluster import API, LocalCluster

        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-informer-")), API)
        cluster.start()
        kubeconfig = str(cluster.kubeconfig)
    try:
        result = asyncio.run(run(kubeconfig, args.pods, args.selected, args.keep or bool(cluster)))
    finally:
        if cluster is not None:
            cluster.stop()
    ok = result["cached"] == args.selected and result["growth_mib"] < LIMIT_MIB
    print(json.dumps(result, indent=2))
    print(
        f"{'PASS' if ok else 'FAIL'}: cached {result['cached']}/{args.selected} pods, "
        f"RSS +{result['growth_mib']:.2f} MiB over an empty cache (limit {LIMIT_MIB} MiB)"
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
