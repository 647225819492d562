"""A small DeepSpeed training run (ZeRO stage 2) on synthetic data.

mpirun starts one process per GPU; ``deepspeed.init_distributed`` finds each
process's rank, the world size and the first rank's address in Open MPI's
environment (``auto_mpi_discovery``), then NCCL carries the collectives.
"""

import argparse

import deepspeed
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--config", default="/home/mpiuser/ds_config.json")
    args = parser.parse_args()
    deepspeed.init_distributed(dist_backend="nccl", auto_mpi_discovery=True)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    engine, _, _, _ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), config=args.config
    )
    generator = torch.Generator().manual_seed(engine.global_rank)
    loss = torch.tensor(0.0)
    for _ in range(args.steps):
        x = torch.randn(engine.train_micro_batch_size_per_gpu(), 64, generator=generator)
        x = x.to(engine.device)
        loss = torch.nn.functional.mse_loss(engine(x), x.sum(dim=1, keepdim=True))
        engine.backward(loss)
        engine.step()
    if engine.global_rank == 0:
        print(f"done: {args.steps} steps on {engine.world_size} ranks, loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
