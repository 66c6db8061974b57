"""A small DDP training loop on two CPU ranks (gloo) under torchrun, started by `compilescope run`:
torch.compile(DistributedDataParallel(mlp)), three steps of batch 8, except rank 1's last batch, 5 rows (its shard of
the data ends short, as a DistributedSampler's with drop_last=False can). Only rank 1 recompiles DDP's forward, [0/1]:
"tensor 'args[0]' size mismatch at index 0. expected 8, actual 5".

What torch 2.13 made of it (the logs say so, not this program): Dynamo breaks the graph in DDP's forward
(Logger.set_runtime_stats_and_log is not traceable; DDP._inside_ddp_forward is skipped), so each of DDP's frames is
compiled, restarted at its break ([0/0] then [0/0_1], ...), and every graph is empty: the MLP itself runs eagerly.
"""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)

mlp = nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 4))
ddp = DDP(mlp)
compiled = torch.compile(ddp)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

STEPS = 3
for step in range(STEPS):
    batch = 5 if rank == 1 and step == STEPS - 1 else 8  # rank 1's shard ends with a short batch
    x, y = torch.randn(batch, 32), torch.randn(batch, 4)
    opt.zero_grad()
    loss = nn.functional.mse_loss(compiled(x), y)
    loss.backward()
    opt.step()
# Both ranks done before either tears gloo down (see two_ranks_gloo.py).
dist.barrier()
dist.destroy_process_group()
