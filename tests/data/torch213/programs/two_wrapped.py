# Two functions under torch.no_grad's decorator, each compiled: torch's decorate_context wraps both in one code
# object, so Dynamo compiles one frame (wrap_inline's `inner`) for both: [0/0], [0/1] run scale (size 5, then 7:
# x.shape[0] == 5 specialized), [0/2], [0/3] run shift (float32, then float64). Only scale's compiles log user
# stacks (its size symbol); shift's show it only in their guard trees' sites.
import torch


@torch.no_grad()
def scale(x):
    if x.shape[0] == 5:
        return x * 2
    return x + 1


@torch.no_grad()
def shift(y):
    return y - 3


def main():
    torch.compile(scale, backend="eager", dynamic=True)(torch.randn(5))
    torch.compile(scale, backend="eager", dynamic=True)(torch.randn(7))
    torch.compile(shift, backend="eager", dynamic=False)(torch.randn(4))
    torch.compile(shift, backend="eager", dynamic=False)(torch.randn(4, dtype=torch.float64))


main()
