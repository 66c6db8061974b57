"""mylib's NetSwap.forward(self, x, target), which swaps its arguments (`target, x = x, target`) before passing them on
to loss3, called with the user's own `x` as its target: forward's x is the user's t, a different tensor from the
user's x. Backend eager; t of 2, 3, 5 rows, x of 2 always.

SWAP_VARIANT=swap: `cm(t, x)` (line 21): forward's x is t, settled by the call.
SWAP_VARIANT=twice: `cm(t, x) + cm(t, x)` (line 23): two calls on one line, which one is not settled.
SWAP_VARIANT=partial: `g(x)` (line 28), g = functools.partial(cm, t): forward's x is t, passed by the partial; the
user's x is forward's target.
"""
import os

import torch
from mylib import NetSwap

VARIANT = os.environ["SWAP_VARIANT"]
cm = torch.compile(NetSwap(), backend="eager")
x = torch.ones(2, 4)
for n in (2, 3, 5):
    t = torch.randn(n, 4)
    if VARIANT == "swap":
        out = cm(t, x)
    elif VARIANT == "twice":
        out = cm(t, x) + cm(t, x)
    else:
        from functools import partial

        g = partial(cm, t)
        out = g(x)
print(out)
