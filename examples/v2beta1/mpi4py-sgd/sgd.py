"""Synchronous data-parallel training with mpi4py: logistic regression by gradient descent
on a generated, seeded dataset.

Every rank makes the same dataset and keeps its own contiguous shard of the rows. Each
epoch it computes the log loss and its gradient summed over its shard; one Allreduce adds
up all ranks' sums, and every rank takes the same step with the mean gradient. The
weights therefore stay identical on every rank and equal those of a single process
training on all the rows (up to the order of floating-point additions).

Output: each rank's host (``rank R of N on HOST``), rank 0's loss per epoch, then the
final weights, their checksum and whether every rank holds the same weights.

    mpirun -n 4 python3 sgd.py [--epochs 40]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

SEED = 20261128
SAMPLES = 8192
FEATURES = 16
EPOCHS = 40
LEARNING_RATE = 0.5


def dataset(
    seed: int = SEED, samples: int = SAMPLES, features: int = FEATURES
) -> tuple[Array, Array]:
    """Features from a standard normal, labels drawn from a logistic model of hidden
    weights: the same arrays on every rank for the same seed."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, features))
    hidden = rng.standard_normal(features)
    p = 1.0 / (1.0 + np.exp(-(x @ hidden)))
    y = (rng.random(samples) < p).astype(np.float64)
    return x, y


def shard(samples: int, rank: int, size: int) -> slice:
    """Rank's contiguous block of rows; the first ``samples % size`` ranks get one more."""
    base, extra = divmod(samples, size)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (1 if rank < extra else 0))


def loss_and_gradient_sums(w: Array, x: Array, y: Array) -> Array:
    """[gradient sum..., loss sum] of the log loss over the rows of x, in one buffer so
    that one Allreduce adds up both."""
    z = x @ w
    p = 1.0 / (1.0 + np.exp(-z))
    loss = np.sum(np.logaddexp(0.0, z) - y * z)
    return np.append(x.T @ (p - y), loss)


def train(
    x: Array,
    y: Array,
    total: int,
    allreduce: Callable[[Array], Array] = lambda buf: buf,
    epochs: int = EPOCHS,
    learning_rate: float = LEARNING_RATE,
    on_epoch: Callable[[int, float], None] = lambda epoch, loss: None,
) -> tuple[Array, list[float]]:
    """Full-batch gradient descent over ``total`` rows, of which this rank holds x, y;
    ``allreduce`` sums a buffer over the ranks (identity for one process). Returns the
    weights and the mean loss before each epoch's step."""
    w = np.zeros(x.shape[1])
    losses = []
    for epoch in range(epochs):
        sums = allreduce(loss_and_gradient_sums(w, x, y)) / total
        loss = float(sums[-1])
        losses.append(loss)
        on_epoch(epoch, loss)
        w = w - learning_rate * sums[:-1]
    return w, losses


def checksum(w: Array) -> float:
    return float(np.sum(w * np.arange(1, len(w) + 1)))


def main() -> None:
    from mpi4py import MPI

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    print(f"rank {rank} of {size} on {MPI.Get_processor_name()}", flush=True)

    def allreduce(buf: Array) -> Array:
        out = np.empty_like(buf)
        comm.Allreduce(buf, out, op=MPI.SUM)
        return out

    def report(epoch: int, loss: float) -> None:
        if rank == 0:
            print(f"epoch {epoch} loss {loss:.6f}", flush=True)

    x, y = dataset()
    rows = shard(len(y), rank, size)
    w, _ = train(x[rows], y[rows], len(y), allreduce, args.epochs, on_epoch=report)
    every = comm.gather(w, root=0)
    if rank == 0:
        spread = max(float(np.max(np.abs(other - w))) for other in every or [w])
        print("weights " + " ".join(f"{v:.12e}" for v in w))
        print(f"weights checksum {checksum(w):.12f} ({size} ranks)")
        print(f"largest weight difference between ranks {spread:.3e}", flush=True)


if __name__ == "__main__":
    main()
