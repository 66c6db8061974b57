"""Two CPU ranks (gloo, localhost) under torchrun, started by `compilescope run`: rank 1 gives torch.cond a Python
bool, so only rank 1's torch prints "Pred is a Python constant", which run records in rank 1's log only."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()


@torch.compile(backend="eager")  # eager: the test is about ranks, not Inductor (keeps it fast)
def pick(x, pred):
    return torch.cond(pred, lambda t: t.sin(), lambda t: t.cos(), (x,))


y = pick(torch.ones(4), True if rank == 1 else torch.tensor(True)).sum()
dist.all_reduce(y)
dist.destroy_process_group()
