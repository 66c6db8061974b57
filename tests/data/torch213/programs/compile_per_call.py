"""Compiling per instance and per call, found by a fresh-eyes review of compilescope.

A user's loop that compiles again and again without meaning to (backend aot_eager, recompile_limit 8, the default):
`serve` calls torch.compile(model) inside the loop each step and builds a new Scaler per request; `scaled`
compiles a lambda made per call that captures a different Python float; `Counter.forward` increments `self.step`
(a module int attribute, so its guard is on the value: one recompile a step until the limit, then eager);
`reset_loop` calls torch._dynamo.reset() every iteration, so the same function is compiled from scratch each time.
With CALL_VARIANT=fixed: compile once outside the loop, pass the scale as a tensor, keep the counter out of
forward, no reset.
"""
import os

import torch
from torch import nn

FIXED = os.environ.get("CALL_VARIANT") == "fixed"


class Scaler(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.scale = scale

    def forward(self, x):
        return self.lin(x).relu() * self.scale


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        if not FIXED:
            self.step += 1
        return x.sin() + 1


def make_scaler(scale):
    return lambda x: x * scale + 1


def poly(x):
    return x.cos() * 2 + x


def main():
    x = torch.randn(4, 8)
    if FIXED:
        model = torch.compile(Scaler(0.5), backend="aot_eager")
        scale_fn = torch.compile(lambda x, s: x * s + 1, backend="aot_eager")
    for step in range(4):
        if FIXED:
            model(x)
            scale_fn(x, torch.tensor(0.5 + step))
        else:
            model = torch.compile(Scaler(0.5 + step), backend="aot_eager")  # a new instance per request
            model(x)
            torch.compile(make_scaler(0.5 + step), backend="aot_eager")(x)
    counter = Counter()
    compiled_counter = torch.compile(counter, backend="aot_eager")
    for step in range(12):
        compiled_counter(x)
        if FIXED:
            counter.step += 1
    compiled_poly = torch.compile(poly, backend="aot_eager")
    for step in range(3):
        if not FIXED:
            torch._dynamo.reset()
        compiled_poly(x)


if __name__ == "__main__":
    main()
