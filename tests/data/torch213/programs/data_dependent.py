"""A model that branches on tensor values, then the same model rewritten the way the docs recommend.

COND_VARIANT unset ("breaks"): `Gate.forward` has `if h.sum() > 0:`, a `while` loop counted by `.item()` and a
boolean-mask index; torch.compile breaks the graph at each.
COND_VARIANT=rewritten: torch.cond for the branch, the loop count an unbacked int (capture_scalar_outputs) bounded
with torch._check, the mask kept in the graph (capture_dynamic_output_shape_ops), fullgraph=True.
COND_VARIANT=pitfalls: what goes wrong on the way, each under fullgraph=True and caught: the first model, a loop on
the unbacked count (GuardOnDataDependentSymNode), a torch.cond whose branches return different shapes, and a
torch.cond with a Python bool as predicate (compiles, with a warning).
"""
import os

import torch

VARIANT = os.environ.get("COND_VARIANT", "breaks")
torch.manual_seed(0)
torch._dynamo.config.capture_scalar_outputs = VARIANT != "breaks"
torch._dynamo.config.capture_dynamic_output_shape_ops = VARIANT != "breaks"


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:
            h = h.relu()
        else:
            h = -h
        n = (x.abs() > 1).sum().item()
        while n > 0:
            h = h * 0.5
            n -= 1
        keep = h[h > 0]
        return keep.sum()


class GateRewritten(Gate):
    def forward(self, x):
        h = self.lin(x)
        h = torch.cond(h.sum() > 0, lambda h: h.relu(), lambda h: -h, (h,))
        n = (x.abs() > 1).sum().item()
        torch._check(n >= 0)
        torch._check(n <= x.numel())
        h = h / 2**n
        keep = h[h > 0]
        return keep.sum()


def halve_while(h):
    n = (h > 0).sum().item()
    while n > 0:
        h = h * 0.5
        n -= 1
    return h


def mismatched(h):
    return torch.cond(h.sum() > 0, lambda h: h.sum(0), lambda h: h * 2, (h,))


def constant_pred(h, training: bool):
    return torch.cond(training, lambda h: h * 2, lambda h: h.cos(), (h,))


def attempt(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # the user reads the error and moves on
        print(f"{type(e).__name__}: {str(e).splitlines()[0]}")


x = torch.randn(4, 8)
if VARIANT == "pitfalls":
    for fn in (Gate(), halve_while, mismatched):
        attempt(torch.compile(fn, backend="aot_eager", fullgraph=True), x)
    torch.compile(constant_pred, backend="aot_eager", fullgraph=True)(x, True)
else:
    model = GateRewritten() if VARIANT == "rewritten" else Gate()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=VARIANT == "rewritten")
    for _ in range(3):
        compiled(torch.randn(4, 8))
