"""A compiled function whose custom op crashes in native code (ctypes reads address 0) the second time the compiled
code runs: the process dies of SIGSEGV inside Inductor's generated code of [0/0], and torch logs nothing of it.
Run under `compilescope run`, Python's faulthandler writes the stack to the trace directory and run appends it to the
log (artifact compilescope_crash). Run: compilescope run native_crash.py
"""
import ctypes

import torch

calls = []


@torch.library.custom_op("compilescope_test::fragile", mutates_args=())
def fragile(x: torch.Tensor) -> torch.Tensor:
    calls.append(1)
    if len(calls) == 2:
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return x.clone()


@fragile.register_fake
def _(x):
    return torch.empty_like(x)


@torch.compile
def scale(x):
    return fragile(x.sin()) * 2


for step in range(3):
    print("step", step, float(scale(torch.randn(8)).sum()), flush=True)
