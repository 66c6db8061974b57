"""Two CPU ranks under torchrun (gloo, localhost), each compiling a small function with Inductor: where each rank's
Inductor cache is, and what it looked up there."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")


@torch.compile
def step(x):
    return torch.nn.functional.gelu(x @ x.T).sum()


y = step(torch.ones(8, 8))
dist.all_reduce(y)
print(f"rank {dist.get_rank()} cache {os.environ['TORCHINDUCTOR_CACHE_DIR']}", flush=True)
dist.destroy_process_group()
