"""A custom op whose fake (meta) implementation dies in native code (ctypes reads address 0), as a C++ meta kernel
with a bug would: torch calls it only to trace the op while compiling, so the program runs uncompiled and crashes
as soon as Dynamo traces the function, whatever the backend."""
import ctypes

import torch


@torch.library.custom_op("compilescope_test::traced_fragile", mutates_args=())
def traced_fragile(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@traced_fragile.register_fake
def _(x):
    ctypes.string_at(0)  # reads address 0: SIGSEGV, while Dynamo traces
    return torch.empty_like(x)


@torch.compile(backend="eager")
def f(x):
    return traced_fragile(x.sin()) * 2


print(float(f(torch.randn(4)).sum()))
