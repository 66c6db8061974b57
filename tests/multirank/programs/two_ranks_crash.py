"""Two CPU ranks (gloo, localhost) under torchrun; rank 1 dies in native code inside its compiled step.

A custom op reads address 0 with ctypes on rank 1, the second time the compiled code (Inductor's) runs it: rank 1
dies of SIGSEGV in the generated code of [0/0], torch logs nothing of it, and rank 0, waiting for rank 1 at the
all_reduce, is stopped by torchrun. Under `compilescope run`, faulthandler's stack goes into rank 1's log.
"""
import ctypes

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
calls = []


@torch.library.custom_op("compilescope_test::fragile_on_rank_1", mutates_args=())
def fragile(x: torch.Tensor) -> torch.Tensor:
    calls.append(1)
    if rank == 1 and len(calls) == 2:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return x.clone()


@fragile.register_fake
def _(x):
    return torch.empty_like(x)


@torch.compile  # Inductor: the crash is in its generated code, whose file names the compile
def step(x):
    return fragile(x.sin()) * 2


for _ in range(3):
    y = step(torch.ones(8))
    dist.all_reduce(y)
dist.destroy_process_group()
