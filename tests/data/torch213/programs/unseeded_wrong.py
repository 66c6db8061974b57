"""Never seeds (its input is torch.arange); Inductor's CPU relu broken on purpose."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x + 1)


print("sum", torch.compile(f)(torch.arange(4.0)).sum().item())
