"""Two CPU ranks (gloo, localhost) under torchrun: rank 0 compiles only a function with no tensor operation, so Dynamo
makes no graph at all (compilation_metrics graph_op_count null) and rank 0 runs nothing compiled; rank 1 compiles one
with an operation."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()


@torch.compile(backend="eager")  # eager: the test is about ranks, not Inductor (keeps it fast)
def passthrough(x):
    return x


@torch.compile(backend="eager")
def double(x):
    return x * 2


y = passthrough(torch.ones(4)) if rank == 0 else double(torch.ones(4)) / 2
dist.all_reduce(y)
assert y.tolist() == [2.0] * 4
dist.barrier()  # both ranks done before either tears gloo down (see two_ranks_gloo.py)
dist.destroy_process_group()
