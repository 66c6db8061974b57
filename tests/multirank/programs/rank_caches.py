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
# (a file per rank, in the working directory: two ranks printing at once can interleave their lines)
with open(f"rank_{dist.get_rank()}_cache.txt", "w") as f:
    f.write(os.environ["TORCHINDUCTOR_CACHE_DIR"])
dist.destroy_process_group()
