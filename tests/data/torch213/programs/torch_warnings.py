"""Torch warnings that reach stderr only: what `compilescope run` records into the trace.

- `mag`: Inductor has no code generation for complex operators and says so with a UserWarning
  (torch/_inductor/lowering.py), once;
- `shift`: called with n = 1, 2, 3, 4 and recompile_limit 2, so Dynamo logs "hit config.recompile_limit"
  at WARNING (torch/_dynamo/convert_frame.py) and runs the rest uncompiled;
- `pick`: torch.cond with a Python constant predicate: Dynamo warns that it specializes on one branch;
- `scaled`: calls a `functools.lru_cache`-wrapped function, which Dynamo traces through its cache, and says so.

WARNINGS_VARIANT=fixed (for `compilescope diff`): `mag` gets a real view of its input and `pick` a tensor predicate,
so only the recompile limit is left; every line keeps its number.
"""
import functools
import os

import torch
import torch._dynamo

torch._dynamo.config.recompile_limit = 2
FIXED = os.environ.get("WARNINGS_VARIANT") == "fixed"


@torch.compile
def mag(z):
    return (z * z).abs() + 1


@torch.compile(dynamic=False)
def shift(x, n):
    return x + n


@torch.compile(backend="eager")
def pick(x, pred):
    return torch.cond(pred, lambda t: t.sin(), lambda t: t.cos(), (x,))


@functools.lru_cache
def scale_of(n):
    return n * 2.0


@torch.compile(backend="eager")
def scaled(x):
    return x * scale_of(3)


z = torch.randn(8, dtype=torch.complex64)
mag(torch.view_as_real(z) if FIXED else z)
for n in range(1, 5):
    shift(torch.ones(4), n)
pick(torch.ones(3), torch.tensor(True) if FIXED else True)
scaled(torch.ones(2))
print("done")
