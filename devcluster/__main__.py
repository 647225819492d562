"""``python -m devcluster up|down|status``.

``up`` starts the full shape in the background (it outlives the command), records its
processes in ``.cluster/state.json`` and prints exactly one line,
``export KUBECONFIG=<repo>/.cluster/kubeconfig``; run again, it reuses a running
cluster. ``down`` stops every process recorded there. Logs: ``.cluster/logs/``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .access import FULL, ClusterError
from .binaries import BinariesMissingError, repo_root
from .cluster import SHAPES, LocalCluster

_STALE = (
    "etcd-data",
    "pki",
    "kubeconfig",
    "kwok.yaml",
    "apiserver-certs",
    "kube-controller-manager-certs",
    "kube-scheduler-certs",
)


def cluster_dir() -> Path:
    return repo_root() / ".cluster"


def _state_path() -> Path:
    return cluster_dir() / "state.json"


def _running() -> LocalCluster | None:
    state = _state_path()
    if not state.is_file():
        return None
    try:
        return LocalCluster.load_state(state)
    except (OSError, ValueError, KeyError):
        return None


def up(shape: str, *, workload_api: bool = False) -> int:
    d = cluster_dir()
    old = _running()
    if old is not None:
        # A running cluster is reused only as started plainly (its gates are not saved).
        if old.alive() and old.shape == shape and not workload_api:
            try:
                status, _ = old.request("GET", "/readyz", timeout=5)
            except OSError:
                status = 0
            if status == 200:
                print(f"export KUBECONFIG={old.kubeconfig}")
                return 0
        old.stop()
    for stale in (*_STALE, "state.json"):
        p = d / stale
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    c = LocalCluster(d, shape, detached=True, workload_api=workload_api)
    c.state_path = _state_path()
    print(f"localcluster: starting the {shape} control plane (logs: {d / 'logs'})", file=sys.stderr)
    c.start()
    c.save_state(_state_path())
    print(f"export KUBECONFIG={c.kubeconfig}")
    return 0


def down() -> int:
    c = _running()
    if c is None:
        print("localcluster: no cluster recorded in .cluster/state.json", file=sys.stderr)
    else:
        c.stop()
    d = cluster_dir()
    for stale in (*_STALE, "state.json"):
        p = d / stale
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    return 0


def status() -> int:
    c = _running()
    if c is None or not c.alive():
        print("localcluster: not running")
        return 1
    print(f"localcluster: {c.shape} cluster at {c.server}, KUBECONFIG={c.kubeconfig}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start a cluster in the background")
    p_up.add_argument("--shape", choices=SHAPES, default=FULL)
    p_up.add_argument(
        "--workload-api",
        action="store_true",
        help="enable the Workload API and gang scheduling (--gang-scheduling=workload-api)",
    )
    sub.add_parser("down", help="stop the cluster started by `up`")
    sub.add_parser("status", help="tell whether the cluster is running")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "up":
            return up(args.shape, workload_api=args.workload_api)
        if args.cmd == "down":
            return down()
        return status()
    except (BinariesMissingError, ClusterError) as e:
        print(f"localcluster: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("localcluster: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
