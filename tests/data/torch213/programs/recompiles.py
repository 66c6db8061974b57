"""Scenario: recompilations and hitting the recompile limit.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/recompiles.py

`torch._dynamo.config.recompile_limit` is the 2.13 name (`cache_size_limit`
is kept as an alias of it).

Function `g` (backend="eager" to keep the log small) is recompiled by:
  1. a shape change   (size 4 -> 8; automatic dynamic marks dim 0 dynamic)
  2. a dtype change   (float32 -> float64)
  3. a requires_grad change (False -> True, float64 kept)
That is 4 compiles of g, which stays within the limit of 4.

Function `h` is compiled with dynamic=False, so every new Python int `n` is
specialized and forces a recompile.  It is called with n = 1..6: compiles for
n=1,2,3,4 and then hits the recompile limit (4) on n=5; from then on the frame
runs eagerly (no further compiles).
"""
import torch

torch._dynamo.config.recompile_limit = 4


def g(x):
    return x * 2 + 1


def h(x, n):
    return x + n


def main():
    cg = torch.compile(g, backend="eager")
    cg(torch.ones(4))  # compile 0/0
    cg(torch.ones(8))  # shape change -> recompile (dim 0 becomes dynamic)
    cg(torch.ones(8, dtype=torch.float64))  # dtype change -> recompile
    # requires_grad change -> recompile (same dtype as the previous entry, so
    # the newest cache entry 0/2 fails on requires_grad, not on dtype)
    cg(torch.ones(8, dtype=torch.float64, requires_grad=True))

    ch = torch.compile(h, backend="eager", dynamic=False)
    x = torch.ones(3)
    for n in range(1, 7):
        out = ch(x, n)
        torch.testing.assert_close(out, x + n)


if __name__ == "__main__":
    main()
