"""A small data-parallel training run with Horovod and PyTorch on synthetic data.

Each rank trains the same linear model on its own random batches; Horovod averages
the gradients with allreduce. ``--elastic`` runs the loop under Horovod's elastic
mode, so workers may join or leave (horovodrun --host-discovery-script) and the run
goes on from the last committed state.
"""

import argparse

import horovod.torch as hvd
import torch


def batches(rank: int, size: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(rank)
    x = torch.randn(size, 32, generator=generator)
    return x, x.sum(dim=1, keepdim=True)


def train(state: "hvd.elastic.TorchState | None", model, optimizer, epochs: int) -> float:
    loss = torch.tensor(0.0)
    start = state.epoch if state is not None else 0
    for epoch in range(start, epochs):
        x, y = batches(hvd.rank() * 1000 + epoch)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if state is not None:
            state.epoch = epoch + 1
            state.commit()
        if hvd.rank() == 0 and epoch % 10 == 0:
            print(f"epoch {epoch} loss {loss.item():.4f} ranks {hvd.size()}", flush=True)
    return float(loss.item())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--elastic", action="store_true")
    args = parser.parse_args()
    hvd.init()
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 1)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size()),
        named_parameters=model.named_parameters(),
    )
    if args.elastic:
        state = hvd.elastic.TorchState(model=model, optimizer=optimizer, epoch=0)
        loss = hvd.elastic.run(lambda s: train(s, model, optimizer, args.epochs))(state)
    else:
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(optimizer, root_rank=0)
        loss = train(None, model, optimizer, args.epochs)
    if hvd.rank() == 0:
        print(f"done: final loss {loss:.4f} on {hvd.size()} ranks", flush=True)


if __name__ == "__main__":
    main()
