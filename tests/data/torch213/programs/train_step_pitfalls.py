"""A compiled training step with two things users hit, found by a fresh-eyes review of compilescope.

`Double` is a custom torch.autograd.Function: AOTAutograd cannot cache a graph that calls one, so every
AOTAutograd cache lookup is bypassed; the FX graph cache starts empty (a fresh cache dir).
`train_step` appends to the global list `history` and reads its length, so Dynamo guards on
len(G['history']) and every call fails that guard: [0/1], then [0/2] hits recompile_limit (2).
[0/1] compiles the same graphs as [0/0], so its FX graph cache lookups hit what [0/0] wrote in this run.
With PITFALLS_VARIANT=no_hits the loss is divided by len(history), a constant that differs in each compile's graph,
so no lookup hits.
"""
import os

import torch

torch._dynamo.config.recompile_limit = 2


class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


history = []


@torch.compile
def train_step(x):
    loss = Double.apply(x).sum()
    history.append(1)
    if os.environ.get("PITFALLS_VARIANT") == "no_hits":
        loss = loss / len(history)
    elif len(history) % 3 == 0:
        loss = loss / 3
    return loss


for _ in range(4):
    train_step(torch.randn(8, requires_grad=True)).backward()
