"""A run-time failure: Inductor's CPU relu kernel raises when it runs (it compiles fine)."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "runtime_error"


def f(x):
    return torch.relu(x + 1)


print(torch.compile(f)(torch.randn(4)))
