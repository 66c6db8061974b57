"""CPU inference served with max-autotune and freezing, inductor (a user wondering why compile is slow).

A small conv + MLP model in eval mode, called under torch.no_grad() with
torch._inductor.config.freezing = True (weights folded into the graph as constants).

AUTOTUNE_VARIANT picks how it is compiled:
  max      (default) torch.compile(model, mode="max-autotune"): Inductor benchmarks its C++ GEMM templates
           against the ATen kernels for each linear and keeps the fastest
  default  torch.compile(model): the same model, no autotuning
The model is called three times with the same batch (only the first call compiles).
"""
import os

import torch

VARIANT = os.environ.get("AUTOTUNE_VARIANT", "max")

torch._inductor.config.freezing = True


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.fc1 = torch.nn.Linear(8 * 8 * 8, 128)
        self.fc2 = torch.nn.Linear(128, 64)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = h.flatten(1)
        h = torch.relu(self.fc1(h))
        h = torch.relu(self.fc2(h))
        return self.head(h)


torch.manual_seed(0)
model = Net().eval()
if VARIANT == "max":
    compiled = torch.compile(model, mode="max-autotune")
else:
    compiled = torch.compile(model)

batch = torch.randn(32, 3, 8, 8)
with torch.no_grad():
    for _ in range(3):
        out = compiled(batch)
print(out.shape)
