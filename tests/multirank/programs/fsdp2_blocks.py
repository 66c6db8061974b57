"""FSDP2 training on two CPU ranks (gloo) under torchrun, started by `compilescope run --fresh-cache`: a model of two
residual blocks and a head, each block sharded with `fully_shard`, then the root; `torch.compile(model)`; three SGD
steps of batch 8.

What torch 2.13 made of it (the logs say so, not this program): FSDP2 wraps its hooks in torch._dynamo.disable
(torch/distributed/fsdp/_fully_shard/_fsdp_common.py, "skipping FSDP hooks"), so `x = block(x)` breaks the graph in
the block's pre-forward hook; the break is inside `Model.forward`'s loop, so Dynamo skips `Model.forward` ([0/0]) and
runs it eagerly, compiling only `Block.forward` ([1/0]; [1/1] for the second block, whose input requires grad). No
graph calls a collective: FSDP's all-gathers and reduce-scatters run eagerly in its hooks.

With FSDP_VARIANT=fixed: each block is compiled before it is sharded (`torch.compile(block)`, then `fully_shard` of the
compiled module), and the model is called uncompiled: no graph break; `Block.forward` compiles as [0/0] and [0/1].
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

FIXED = os.environ.get("FSDP_VARIANT") == "fixed"

dist.init_process_group("gloo")
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self, dim=16, n_blocks=2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(n_blocks))
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


model = Model()
if FIXED:
    for i, block in enumerate(model.blocks):
        model.blocks[i] = torch.compile(block)  # compiled first, then sharded: FSDP's hooks run between the blocks
        fully_shard(model.blocks[i])
    fully_shard(model)
    compiled = model
else:
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    compiled = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)

for step in range(3):
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    opt.zero_grad()
    loss = nn.functional.mse_loss(compiled(x), y)
    loss.backward()
    opt.step()
# Both ranks done before either tears gloo down (see two_ranks_gloo.py).
dist.barrier()
dist.destroy_process_group()
