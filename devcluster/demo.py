"""``make demo``: an MPIJob from ``examples/`` run to completion on a local control plane.

``python -m devcluster.demo [--kwok] [--mpi STACK] [--example FILE] [--fresh] [--timeout S]``

1. Reuses the cluster of ``make cluster-up`` (``.cluster/``) when it is running with
   the shape wanted, otherwise starts one in a temporary directory: the ``real``
   shape (a real node running containers; root, ``make node``), or with ``--kwok``
   the ``full`` shape, whose fake nodes run no containers.
2. Installs the MPIJob CRD of ``crd/``.
3. Starts the operator (the ``mpi-operator`` command) against the cluster,
   watching one fresh namespace.
4. Applies the example (``examples/v2beta1/pi/pi.yaml`` by default; with ``--mpi``,
   pi on that stack's image of the real node, ``mpi-operator-python/mpi-pi:<stack>``
   (the example itself names the public ``mpioperator/mpi-pi:openmpi``): ``openmpi`` (Open MPI 5),
   ``openmpi4`` (Open MPI 4.1), ``mpich`` (pi-mpich.yaml) or ``intel`` (Intel MPI,
   pi-intel.yaml)) with
   ``kubectl``: on the real node (its nodeSelector and toleration added), or with
   ``--kwok`` with the KWOK annotation that makes its launcher finish after a few
   seconds.
5. Prints a line whenever the job's state, conditions or children change, then a
   summary of what the operator created and, on the real node, the launcher's log
   (the value of pi the program computed) and the host each rank ran on.

Everything it started (operator, namespace, a fresh cluster) is stopped on the
way out, including on Ctrl-C. Exit status: 0 when the job Succeeded, 1 otherwise
(with the reason and the end of the operator's log), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import yaml

from .access import FULL, REAL, ClusterError, KubectlError
from .binaries import BinariesMissingError, repo_root
from .cluster import LocalCluster
from .demo_job import DemoError, Observer, Snapshot, load_mpijob
from .nodeconfig import MPI_IMAGES
from .operator_process import Operator, operator_command
from .sample_jobs import on_real_node, with_kwok_behaviour

Obj = dict[str, Any]

DEFAULT_EXAMPLE = Path("examples/v2beta1/pi/pi.yaml")
#: The real node's MPI stacks (hack/build-node-images.sh's tags) and their pi example.
MPI_EXAMPLES = {
    "openmpi": DEFAULT_EXAMPLE,
    "openmpi4": DEFAULT_EXAMPLE,
    "mpich": Path("examples/v2beta1/pi/pi-mpich.yaml"),
    "intel": Path("examples/v2beta1/pi/pi-intel.yaml"),
}
RANK_LINE = re.compile(r"rank (\d+) of (\d+) on (\S+)")
LAUNCHER_RUNS_FOR = "4s"
WORKERS_START_AFTER = "1s"
POLL_INTERVAL = 0.3


def running_dev_cluster(shape: str = FULL) -> LocalCluster | None:
    """The cluster of ``make cluster-up`` if it is up, of ``shape`` and ready."""
    state = repo_root() / ".cluster" / "state.json"
    if not state.is_file():
        return None
    try:
        cluster = LocalCluster.load_state(state)
    except (OSError, ValueError, KeyError):
        return None
    if cluster.shape != shape or not cluster.alive():
        return None
    try:
        status, _ = cluster.request("GET", "/readyz", timeout=5)
    except OSError:
        return None
    return cluster if status == 200 else None


@contextlib.contextmanager
def local_cluster(
    fresh: bool, say: Callable[[str], None], shape: str = FULL
) -> Iterator[LocalCluster]:
    cluster = None if fresh else running_dev_cluster(shape)
    if cluster is not None:
        say(f"using the running local cluster at {cluster.server} (.cluster/)")
        yield cluster
        return
    workdir = Path(tempfile.mkdtemp(prefix="mpi-operator-demo-"))
    cluster = LocalCluster(workdir, shape)
    try:
        what = "a local cluster with a real node" if shape == REAL else "a local control plane"
        say(f"starting {what} in {workdir} (logs: {workdir / 'logs'}) ...")
        started = time.monotonic()
        cluster.start()
        say(f"control plane up at {cluster.server} in {time.monotonic() - started:.0f}s")
        yield cluster
    finally:
        say("stopping the local control plane")
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def wait(check: Callable[[], bool], timeout: float, what: str, operator: Operator) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        code = operator.exited()
        if code is not None:
            raise DemoError(f"the operator exited with status {code} while waiting for {what}")
        if time.monotonic() > deadline:
            raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(POLL_INTERVAL)


def with_mpi(job: Obj, mpi: str) -> Obj:
    """The job with every container on the real node's image of ``mpi``; MPICH's
    launcher waits for Ready workers (its mpirun waits forever on an unresolved name)."""
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = MPI_IMAGES[mpi]
    if mpi == "mpich":
        job["spec"]["launcherCreationPolicy"] = "WaitForWorkersReady"
    return job


def print_launcher_log(cluster: LocalCluster, namespace: str, name: str, out: TextIO) -> None:
    """The launcher pod's log, as ``kubectl logs`` shows it (the kubelet serves it), then
    the host of each rank that printed one."""
    result = cluster.kubectl("logs", "-n", namespace, f"job/{name}-launcher", check=False)
    print(f"The launcher's log (kubectl logs job/{name}-launcher):", file=out)
    text = result.stdout if result.returncode == 0 else result.stderr
    for line in text.rstrip().splitlines():
        print(f"  {line}", file=out)
    ranks = sorted((int(r), host) for r, _, host in RANK_LINE.findall(text))
    if ranks:
        print("Where the ranks ran:", file=out)
        for rank, host in ranks:
            print(f"  rank {rank} on {host}", file=out)


def run(
    example: Path,
    fresh: bool,
    timeout: float,
    out: TextIO,
    launcher_runs_for: str = LAUNCHER_RUNS_FOR,
    kwok: bool = False,
    mpi: str | None = None,
) -> int:
    def say(message: str) -> None:
        print(f"demo: {message}", file=out, flush=True)

    if kwok:
        job = with_kwok_behaviour(
            load_mpijob(example),
            launcher_runs_for=launcher_runs_for,
            start_delay=WORKERS_START_AFTER,
        )
    else:
        job = load_mpijob(example)
        job = on_real_node(with_mpi(job, mpi) if mpi else job)
    name = job["metadata"]["name"]
    with local_cluster(fresh, say, FULL if kwok else REAL) as cluster:
        crds = cluster.install_crds([repo_root() / "crd" / "kubeflow.org_mpijobs.yaml"])
        say(f"installed CRD {', '.join(crds)}")
        namespace = cluster.create_namespace("demo")
        say(f"created namespace {namespace}")
        logdir = Path(tempfile.mkdtemp(prefix="mpi-operator-demo-logs-"))
        operator = Operator(cluster.kubeconfig, namespace, logdir / "operator.log")
        succeeded = False
        try:
            operator.start()
            say(f"started {operator_command()[0]} (log: {operator.log_path})")
            wait(operator.leading, 90, "the operator to become leader", operator)
            say("the operator is leading; applying " + str(example))
            applied = cluster.kubectl(
                "apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(job, sort_keys=False)
            )
            say(applied.stdout.strip())
            observer = Observer(cluster, namespace, name)
            started = time.monotonic()
            last: Snapshot | None = None
            shown: tuple[Any, ...] | None = None

            def finished() -> bool:
                nonlocal last, shown
                last = observer.snapshot()
                if last is None:
                    return False
                key = (last.state, last.conditions, last.pods)
                if key != shown:
                    shown = key
                    print(last.line(name, time.monotonic() - started), file=out, flush=True)
                conds = last.conditions
                return conds.get("Succeeded") == "True" or conds.get("Failed") == "True"

            wait(finished, timeout, f"mpijob {name} to finish", operator)
            assert last is not None
            succeeded = last.conditions.get("Succeeded") == "True"
            elapsed = time.monotonic() - started
            verdict = "Succeeded" if succeeded else "Failed"
            say(f"mpijob {namespace}/{name} {verdict} after {elapsed:.1f}s")
            print("What the operator created for it:", file=out)
            for line in observer.summary(last):
                print(line, file=out)
            if not kwok:
                print_launcher_log(cluster, namespace, name, out)
            if not succeeded:
                raise DemoError(f"mpijob {name} failed")
        except (DemoError, KubectlError) as err:
            say(f"error: {err}")
            tail = operator.log_tail()
            if tail:
                print(f"--- end of the operator's log ({operator.log_path}) ---", file=out)
                print(tail, file=out)
            return 1
        finally:
            say("stopping the operator")
            operator.stop()
            cluster.delete_namespace(namespace)
            if succeeded:
                shutil.rmtree(logdir, ignore_errors=True)
    say("done: everything the demo started is stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devcluster.demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--example", type=Path, default=None, help=f"default: {DEFAULT_EXAMPLE}")
    parser.add_argument(
        "--fresh", action="store_true", help="always start a new cluster, even if .cluster/ is up"
    )
    parser.add_argument(
        "--kwok",
        action="store_true",
        help="the fast demo: KWOK's fake nodes (full shape), no containers, no root needed",
    )
    parser.add_argument(
        "--mpi",
        choices=list(MPI_EXAMPLES),
        default=None,
        help="the real node's MPI stack for pi, on mpi-operator-python/mpi-pi:<stack> (default: "
        "the example's own image)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for the job to end")
    parser.add_argument(
        "--launcher-runs-for",
        default=LAUNCHER_RUNS_FOR,
        metavar="DURATION",
        help=f"with --kwok: how long the launcher runs (Go duration; {LAUNCHER_RUNS_FOR})",
    )
    args = parser.parse_args(argv)
    example = args.example or repo_root() / MPI_EXAMPLES.get(args.mpi, DEFAULT_EXAMPLE)
    try:
        return run(
            example,
            args.fresh,
            args.timeout,
            sys.stdout,
            args.launcher_runs_for,
            args.kwok,
            args.mpi,
        )
    except (BinariesMissingError, ClusterError, DemoError, TimeoutError, OSError) as err:
        print(f"demo: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("demo: interrupted; everything it started is stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
