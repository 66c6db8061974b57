"""Never seeds: a coin flip printed as 0 or 1 (run to run, whatever the stage), beside a compiled result that is right."""
import torch


def f(x):
    return torch.relu(x + 1)


print("sum", torch.compile(f)(torch.arange(4.0)).sum().item())
print("coin", int(torch.rand(()).item() > 0.5))
