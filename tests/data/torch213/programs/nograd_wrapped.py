# A plain function under a library decorator (torch.no_grad) compiled with dynamic=True, called from main():
# Dynamo compiles torch's wrapper frame (_contextlib.py's decorate_context(*args, **kwargs)), whose args[0] is the
# user's tensor x, not a model. x.shape[0] == 5 specializes its size at the first call.
import torch


@torch.no_grad()
def scale(x):
    if x.shape[0] == 5:
        return x * 2
    return x + 1


def main():
    compiled = torch.compile(scale, dynamic=True, backend="eager")
    compiled(torch.randn(5))
    compiled(torch.randn(7))


main()
