"""Seeded; Inductor's CPU relu broken on purpose; prints a metric as a percentage, and a progress line."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
torch.manual_seed(0)


def f(x):
    return torch.relu(x + 1)


x = torch.randn(1000)
y = torch.compile(f)(x)
print("[==========>] 100%")
print(f"accuracy {(y > 1).float().mean().item() * 100:.1f}%")
