"""Inductor's generated C++ kernel dies in native code: torch's testing switch makes its relu `throw`, and the throw
cannot leave the kernel's OpenMP parallel region, so the C++ runtime calls terminate() and the process dies of SIGABRT
in an OpenMP thread, no Python thread (faulthandler then marks no thread as the current one). Only Inductor generates
that kernel: with backend="eager" or "aot_eager" the program runs. Run: compilescope run kernel_abort.py
"""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error"
torch._inductor.config.cpp.threads = 2  # a parallel region whatever the machine's cores: the throw cannot leave it


def f(x):
    return torch.relu(x + 1)


print(float(torch.compile(f)(torch.randn(1 << 20)).sum()))
