"""An accuracy bug: Inductor's CPU codegen computes relu wrongly (and compiles fine)."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x + 1)


print(torch.compile(f)(torch.randn(4)))
