"""Run under torchrun with the torch plugin's PET_* env: gloo all-reduce, then a short
data-parallel training loop whose loss must go down on every rank."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert world == int(os.environ["WORLD_SIZE"]) == 2, world
value = torch.tensor([rank + 1.0])
dist.all_reduce(value)
assert value.item() == 3.0, value
print(f"rank {rank}/{world}: all_reduce(rank + 1) = {value.item()}", flush=True)

torch.manual_seed(rank)
inputs = torch.randn(256, 4)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.25
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for _ in range(30):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
weights = model.module.weight.detach().clone()
dist.all_reduce(weights)
same = torch.allclose(weights / world, model.module.weight.detach())
print(f"rank {rank}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, replicas equal: {same}",
      flush=True)
assert losses[-1] < losses[0] / 10, losses
assert same
dist.destroy_process_group()
