"""Elastic data-parallel training with mpi4py: sgd.py's training, run by a driver that
follows the job's hosts as they come and go, as Horovod's elastic mode does.

``elastic.py driver`` runs in the launcher. It reads the hosts that run now from the
operator's ``/etc/mpi/discover_hosts.sh``, starts ``mpirun`` on them, and keeps the
latest checkpoint that rank 0 prints after every epoch. When the host set changes (a
worker joined after a scale-up, left after a scale-down, or was lost), or ``mpirun``
ends early (a worker failed), it stops the run and starts a new one on the current
hosts from the last checkpoint. Between ``--min-np`` and ``--max-np`` ranks, one a host.

``elastic.py train`` is one run's rank: sgd.py's full-batch gradient descent from the
checkpoint's epoch and weights, for the epochs left. Every run shards the same rows over
its ranks and adds up the gradient sums with one Allreduce, so the result does not
depend on how many hosts each epoch ran on: the final checksum is the one a single
uninterrupted run gives (up to the order of floating-point additions).

    python3 elastic.py driver --min-np 1 --max-np 4 [--epochs 40] [--epoch-seconds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from sgd import EPOCHS, LEARNING_RATE, checksum, dataset, loss_and_gradient_sums, shard

CHECKPOINT = "checkpoint "


def train(state: dict[str, Any], epochs: int, epoch_seconds: float) -> None:
    """One run's rank: the epochs from the checkpoint's on; rank 0 prints each epoch's
    loss with its checkpoint, and the weights' checksum once all are done. SIGUSR1 (which
    mpirun passes on to every rank) stops the run at the end of the epoch under way."""
    from mpi4py import MPI

    stop = np.zeros(1)
    signal.signal(signal.SIGUSR1, lambda signum, frame: stop.fill(1.0))
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    print(f"rank {rank} of {size} on {MPI.Get_processor_name()}", flush=True)
    x, y = dataset()
    rows = shard(len(y), rank, size)
    xs, ys = x[rows], y[rows]
    w = np.array(state["w"]) if state.get("w") is not None else np.zeros(x.shape[1])
    for epoch in range(int(state.get("epoch", 0)), epochs):
        time.sleep(epoch_seconds)  # stands in for an epoch's real work
        sums = np.empty(x.shape[1] + 2)  # the gradient, the loss, the stop flag
        # The stop flag rides with the sums: every rank learns of it in the same epoch.
        comm.Allreduce(np.append(loss_and_gradient_sums(w, xs, ys), stop), sums, op=MPI.SUM)
        stopping = sums[-1] > 0
        sums = sums[:-1] / len(y)
        w = w - LEARNING_RATE * sums[:-1]
        if rank == 0:
            checkpoint = {"epoch": epoch + 1, "w": [float(v) for v in w]}
            # One write: the epoch is reported if and only if its checkpoint is.
            print(
                f"epoch {epoch} loss {float(sums[-1]):.6f} on {size} ranks\n"
                + CHECKPOINT
                + json.dumps(checkpoint),
                flush=True,
            )
        if stopping:
            return
    if rank == 0:
        print(f"weights checksum {checksum(w):.9f}", flush=True)


def discover(script: str, max_np: int) -> list[str]:
    """The hosts that run now, as the operator's script lists them, at most ``max_np``."""
    try:
        out = subprocess.run(["sh", script], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as err:
        print(f"driver: {script} failed: {err}", flush=True)
        return []
    return sorted(line.strip() for line in out.stdout.splitlines() if line.strip())[:max_np]


class Run:
    """One ``mpirun`` on a set of hosts, its output echoed and its checkpoints kept."""

    def __init__(self, hosts: list[str], state: dict[str, Any], args: argparse.Namespace):
        self.state = state
        self.checkpoints = 0
        self.hostfile = hostfile = Path(tempfile.mkstemp(prefix="elastic-hosts-")[1])
        hostfile.write_text("".join(f"{h} slots=1\n" for h in hosts))
        # This run's hosts only, whatever the operator's hostfile lists.
        env = {
            **os.environ,
            "OMPI_MCA_orte_default_hostfile": str(hostfile),
            "PRTE_MCA_prte_default_hostfile": str(hostfile),
        }
        command = [
            "mpirun", "-n", str(len(hosts)),
            sys.executable, str(Path(__file__).resolve()), "train",
            "--state", json.dumps(state),
            "--epochs", str(args.epochs),
            "--epoch-seconds", str(args.epoch_seconds),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(CHECKPOINT):
                self.state = json.loads(line[len(CHECKPOINT) :])
                self.checkpoints += 1
            else:
                print(line, end="", flush=True)

    def stop(self, grace: float) -> None:
        """Asks the ranks to stop after the epoch under way; ends them if they have not
        within ``grace`` seconds (a rank that cannot finish its epoch: a host is gone)."""
        self.process.send_signal(signal.SIGUSR1)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def finish(self) -> int:
        code = self.process.wait()
        self.reader.join()
        self.hostfile.unlink(missing_ok=True)
        return code


def drive(args: argparse.Namespace) -> int:
    state: dict[str, Any] = {"epoch": 0, "w": None}
    progress = time.monotonic()
    while int(state["epoch"]) < args.epochs:
        if time.monotonic() - progress > args.stall_seconds:
            print(f"driver: no epoch trained for {args.stall_seconds:.0f} s", flush=True)
            return 1
        hosts = discover(args.discover, args.max_np)
        if len(hosts) < args.min_np:
            print(f"driver: {len(hosts)} hosts, waiting for {args.min_np}", flush=True)
            time.sleep(args.poll_seconds)
            continue
        print(
            f"driver: launching {len(hosts)} ranks from epoch {state['epoch']} on "
            + " ".join(h.split(".")[0] for h in hosts),
            flush=True,
        )
        run = Run(hosts, state, args)
        while run.process.poll() is None:
            time.sleep(args.poll_seconds)
            now = discover(args.discover, args.max_np)
            if now != hosts and len(now) >= args.min_np:
                print(f"driver: the hosts changed ({len(hosts)} -> {len(now)})", flush=True)
                run.stop(grace=args.epoch_seconds * 2 + 10)
        code = run.finish()
        state = run.state
        if run.checkpoints:
            progress = time.monotonic()
        if int(state["epoch"]) < args.epochs and code != 0:
            print(f"driver: mpirun ended with {code} at epoch {state['epoch']}", flush=True)
            time.sleep(args.poll_seconds)
    print(f"driver: trained {args.epochs} epochs", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    driver = modes.add_parser("driver", help="run in the launcher")
    driver.add_argument("--min-np", type=int, default=1)
    driver.add_argument("--max-np", type=int, default=4)
    driver.add_argument("--poll-seconds", type=float, default=2.0)
    driver.add_argument("--discover", default="/etc/mpi/discover_hosts.sh", help="host script")
    driver.add_argument("--stall-seconds", type=float, default=300.0, help="give up after")
    rank = modes.add_parser("train", help="one run's rank (started by the driver)")
    rank.add_argument("--state", required=True)
    for mode in (driver, rank):
        mode.add_argument("--epochs", type=int, default=EPOCHS)
        mode.add_argument("--epoch-seconds", type=float, default=1.0)
    args = parser.parse_args()
    if args.mode == "train":
        train(json.loads(args.state), args.epochs, args.epoch_seconds)
        return 0
    return drive(args)


if __name__ == "__main__":
    sys.exit(main())
