"""Tensors a library's compiled model (mylib, in library_args_site) passes on to a function compiled apart, where the
library's line passes an expression or the user's call passes one tensor twice. Backend eager; tensors of 2, 3, 5
rows.

PASSED_VARIANT=kwargs: `cm(input_ids=tok)` (line 20) into NetKw.forward(self, **kwargs), which calls
`inner_kw(input_ids=kwargs["input_ids"])`: inner_kw's input_ids is the user's tok.
PASSED_VARIANT=same: `cm(t, t)` (line 23) into Net3.forward(self, x, target), which calls loss3(out, target): forward's
tree checks target only as `L['x'] is L['target']`; loss3's target is the user's t.
"""
import os

import torch
from mylib import Net3, NetKw

VARIANT = os.environ["PASSED_VARIANT"]
cm = torch.compile(NetKw() if VARIANT == "kwargs" else Net3(), backend="eager")
for n in (2, 3, 5):
    if VARIANT == "kwargs":
        tok = torch.randn(n, 4)
        out = cm(input_ids=tok)
    else:
        t = torch.randn(n, 4)
        out = cm(t, t)
print(out)
