"""A user compiles a library's model (mylib, in library_args_site/lib/python3.11/site-packages: a stand-in for an
installed package) and calls it with tensors whose size changes, passing them positionally or over two lines, as
users do. Backend eager.

ARGS_VARIANT=positional: `cm(t)` (line 24) into mylib's `Net.forward(self, x)`: x's size recompiles.
ARGS_VARIANT=target: `cm(x, t)` (line 26), x fixed, t of n rows: Net3.forward passes `target` on to loss3, which breaks
the graph (a print), so `target` is first used in loss3's resume function.
ARGS_VARIANT=multiline: `cm(torch.randn(n, 4),` / `target=t)` (lines 28-29): a call the stack shows by its first line.
"""
import os

import torch
from mylib import Net, Net2, Net3

VARIANT = os.environ.get("ARGS_VARIANT", "positional")
MODELS = {"positional": Net, "target": Net3, "multiline": Net2}


cm = torch.compile(MODELS[VARIANT](), backend="eager")
x = torch.ones(2, 4)
for n in (2, 3, 5):
    t = torch.randn(n, 4)
    if VARIANT == "positional":
        out = cm(t)
    elif VARIANT == "target":
        out = cm(x, t)
    else:
        out = cm(torch.randn(n, 4),
                 target=t)
print(out)
