"""A program that compiles and computes correctly with every backend."""
import torch


def f(x):
    return torch.relu(x + 1)


print(torch.compile(f)(torch.randn(4)))
