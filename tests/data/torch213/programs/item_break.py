"""A compiled step that reads its loss as a Python float (`loss.item()`) and computes on with it.

`loss.item()` breaks the graph (capture_scalar_outputs is off): the float is the value on the interpreter stack at
the break, passed into the resume function torch_dynamo_resume_in_train_step_at_19 as its argument ___stack0.
[1/0] specializes on that float; the second call's differs, so [1/1] recompiles with it dynamic (a float symbol,
source L['___stack0']); the third call runs [1/1].
With ITEM_VARIANT=steady every call gets the same x, so the float never changes: [1/0] only, no symbol.
"""
import os

import torch

torch.manual_seed(0)


@torch.compile
def train_step(x, w):
    loss = (x * w).sum()
    scale = loss.item()
    return w * scale


w = torch.randn(8)
x = torch.randn(8)
for _ in range(3):
    train_step(x if os.environ.get("ITEM_VARIANT") == "steady" else torch.randn(8), w)
