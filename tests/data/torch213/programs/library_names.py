"""mylib's models called where the log alone could name the wrong tensor of the user's. Backend eager; the user's x
of 2 rows always.

NAMES_VARIANT=static: `cm(x, t)` (line 25) into NetStatic's staticmethod forward(unused, x), which reads nothing of
its first parameter: forward's x is the user's t (the call's second argument; 2, 3, 5 rows), not the user's x;
loss_star(*args), compiled apart, takes forward's x as args[1].
NAMES_VARIANT=rebound: `cm(*pair)` (line 28), pair = (t, x), into Net3.forward(self, x, target): forward's x is t (2,
3, 5 rows), and the line names no x, but the user's x (line 21) is their other tensor, forward's target.
NAMES_VARIANT=several: `cm(a, t)` (line 31) into Net3.forward(self, x, target), a of 2, 3, 3 rows and t of 2, 2, 5:
two sizes change, forward's x (the user's a) at the second call and its target (t) at the third.
NAMES_VARIANT=star: `cm(x, t)` (line 25) into NetStar.forward(self, x, target), which calls loss_star(target, out):
loss_star's one local, args, is the tuple (t, out), no tensor of the user's.
"""
import os

import torch
from mylib import Net3, NetStar, NetStatic

VARIANT = os.environ["NAMES_VARIANT"]
cm = torch.compile({"static": NetStatic, "star": NetStar}.get(VARIANT, Net3)(), backend="eager")
x = torch.ones(2, 4)
for n, m in ((2, 2), (3, 2), (3, 5)):
    t = torch.randn(m if VARIANT == "several" else n + m - 2, 4)
    if VARIANT in ("static", "star"):
        out = cm(x, t)
    elif VARIANT == "rebound":
        pair = (t, x)
        out = cm(*pair)
    else:
        a = torch.randn(n, 4)
        out = cm(a, t)
print(out)
