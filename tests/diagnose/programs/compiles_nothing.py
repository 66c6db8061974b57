"""Imports torch and computes eagerly: no torch.compile anywhere (a user who forgot to call the compiled function)."""
import torch

model = torch.nn.Linear(4, 2)
compiled = torch.compile(model)  # made, never called
print(model(torch.ones(1, 4)).shape)
