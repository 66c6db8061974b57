"""Two CPU ranks (gloo, localhost) under torchrun; rank 1 compiles one graph more than rank 0."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()


@torch.compile(backend="eager")  # eager: the test is about ranks, not Inductor (keeps it fast)
def step(x):
    return (x * 2).sum()


y = step(torch.ones(4))
if rank == 1:
    y = step(torch.ones(3, 2))  # a recompile only rank 1 does: the divergence the report must find
dist.all_reduce(y)
assert y.item() == 20.0 if rank == 0 else True
# Both ranks done before either tears gloo down: once in a CI run, rank 1 aborted at exit ("terminate called without an
# active exception", a gloo thread still joinable as the group was destroyed) while rank 0 was already destroying it.
dist.barrier()
dist.destroy_process_group()
