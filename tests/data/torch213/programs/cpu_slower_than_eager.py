"""CPU: a compiled model that is slower than eager, profiled eagerly and compiled as a user would.

A small head on (batch, 16) tensors (LayerNorm, Linear, then a loop of tiny elementwise ops), a data-dependent
branch on its output (a graph break every call), dynamic=False and three batch sizes (a recompile for each new
one, the third inside the profile); beside it one big elementwise chain that Inductor fuses into one C++ loop.
Each run is profiled over a few steps and written to PROFILE_DIR (default: the current directory).
"""
import os

import torch
from torch.profiler import ProfilerActivity, profile

torch._inductor.config.cpp.enable_kernel_profile = True  # names cpp_fused_* in the profile


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = self.proj(self.norm(x))
        for _ in range(4):  # many tiny ops on a (batch, 16) tensor
            h = h * 0.5 + torch.tanh(h) - h.mean()
        if h.sum() > 0:  # data-dependent branch: a graph break on every call
            h = h + 1
        return torch.sigmoid(h)


def smooth(big):  # one big elementwise chain: eager makes a pass per op, Inductor one fused loop
    y = big * 0.9 + 0.1
    y = torch.exp(-y * y) * torch.cos(y) + torch.sin(y) * 0.5
    return torch.where(y > 0, y, y * 0.01).sum()


def step(head, smooth_fn, x, big):
    return head(x).sum() + smooth_fn(big)


def record(name, head, smooth_fn, batches, big):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for b in batches:
            step(head, smooth_fn, torch.randn(b, 16), big)
    prof.export_chrome_trace(os.path.join(os.environ.get("PROFILE_DIR", "."), f"{name}.profile.json"))


def main():
    torch.manual_seed(0)
    head, big = Head().eval(), torch.randn(512, 1024)
    head_c = torch.compile(head, dynamic=False)
    smooth_c = torch.compile(smooth, dynamic=False)
    with torch.no_grad():
        for b in (8, 24):  # warm up: compile for two batch sizes
            step(head, smooth, torch.randn(b, 16), big)
            step(head_c, smooth_c, torch.randn(b, 16), big)
        record("eager", head, smooth, [8, 24, 8, 40, 8], big)
        record("compiled", head_c, smooth_c, [8, 24, 8, 40, 8], big)  # batch 40: a recompile in the profile


if __name__ == "__main__":
    main()
