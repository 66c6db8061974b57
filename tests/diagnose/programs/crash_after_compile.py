"""A program that dies in native code (ctypes reads address 0) after its compiled function has run: it crashes
the same with torch.compile disabled, so the crash is the program's own."""
import ctypes

import torch


@torch.compile(backend="eager")
def f(x):
    return x.sin() + 1


print(float(f(torch.randn(4)).sum()), flush=True)
ctypes.string_at(0)
