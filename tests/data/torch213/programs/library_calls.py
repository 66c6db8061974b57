"""Calls of a library's compiled model (mylib, in library_args_site) whose line does not settle which argument is
which tensor: library_args.py's cases made harder. Backend eager; tensors of 2, 3, 5 rows.

CALLS_VARIANT=wrapped: `torch.add(cm(x, t), u)` (line 25): the compiled call inside another call.
CALLS_VARIANT=unbound: `unbound(net, x, t)` (line 27), unbound = torch.compile(Net3.forward): self passed by hand.
CALLS_VARIANT=twocallers: `cm(x, t)` then `cm4(x, t)` (lines 29-30): Net3 and Net4 each call loss3, passing their
arguments in different orders (loss3(out, target), loss3(target, out)).
CALLS_VARIANT=deep: `cm(x, ----…t)` (line 32, 470 unary minuses): a line nested past Python's recursion limit.
"""
import os

import torch
from mylib import Net3, Net4

VARIANT = os.environ["CALLS_VARIANT"]
net = Net3()
cm = torch.compile(net, backend="eager")
cm4 = torch.compile(Net4(), backend="eager")
unbound = torch.compile(Net3.forward, backend="eager")
x = torch.ones(2, 4)
u = torch.ones(3)
for n in (2, 3, 5):
    t = torch.randn(n, 4)
    if VARIANT == "wrapped":
        out = torch.add(cm(x, t), u)
    elif VARIANT == "unbound":
        out = unbound(net, x, t)
    elif VARIANT == "twocallers":
        out = cm(x, t)
        out = cm4(x, t)
    else:
        out = cm(x, --------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------------t)
print(out)
