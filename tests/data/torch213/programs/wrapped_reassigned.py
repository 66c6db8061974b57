# two_wrapped's torch.no_grad functions, where the name a tensor's first use reads is not the argument's: shift
# reassigns its parameter y to s (WRAPPED_VARIANT=shadow: s's dtype changes; shadow_size: its size), star takes *ys
# and reads ys[1] (star). One frame of torch's wrapper (wrap_inline's `inner`) runs them all: scale's compiles first
# ([0/0], [0/1]), then shift's or star's ([0/2], [0/3], dynamic=False), whose args[1] is the second tensor.
import os

import torch

VARIANT = os.environ["WRAPPED_VARIANT"]


@torch.no_grad()
def scale(x):
    if x.shape[0] == 5:
        return x * 2
    return x + 1


@torch.no_grad()
def shift(y, s):
    y = s
    return y - 3


@torch.no_grad()
def star(*ys):
    return ys[1] - 3


def main():
    torch.compile(scale, backend="eager", dynamic=True)(torch.randn(5))
    torch.compile(scale, backend="eager", dynamic=True)(torch.randn(7))
    a = torch.randn(4)
    second = torch.randn(6) if VARIANT == "shadow_size" else torch.randn(4, dtype=torch.float64)
    f = star if VARIANT == "star" else shift
    torch.compile(f, backend="eager", dynamic=False)(a, torch.randn(4))
    torch.compile(f, backend="eager", dynamic=False)(a, second)


main()
