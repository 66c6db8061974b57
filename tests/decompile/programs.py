"""Functions for the decompiler round trip: each compiled with torch.compile(backend="eager").

Each entry: (name, function or module factory, list of argument tuples/kwargs to call it with).
"""

import torch


def branch_break(x):
    y = x * 2
    if y.sum() > 0:  # data-dependent branch: the case depyf 0.20.0 fails to decompile on torch 2.13
        y = y + 1
    else:
        y = y - 1
    return y.relu()


def loop_break(x):
    for i in range(3):
        x = x + i
        print("step", i)  # a graph break inside a loop
    return x * 2


def loops_around_break(x):
    y = x
    for i in range(3):  # unrolled into the first graph
        y = y + i
    print("between loops")  # the graph break
    for t in [x, y]:  # unrolled into the resume function's graph
        y = y + t
    return y


def with_print(x):
    y = x.sin()
    print("between graphs")
    return y.cos()


def with_item(x):
    s = x.sum().item()
    return x * s


def keywords(x, *, scale=2.0, shift=None):
    y = torch.nn.functional.softmax(x * scale, dim=-1)
    if shift is not None:
        y = y + shift
    return y


def helper(t, k):
    def inner(u):
        return u * k + 1

    return inner(t).sin()


def nested_and_kwargs(x, n=2):
    y = helper(x, n)
    print("nested")
    return {"out": y, "sum": y.sum()}, [y.max()]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1  # a side effect on the module, replayed by the transformed code
        h = self.lin(x).relu()
        if h.mean() > 0.1:
            return h * 2
        return h - 1


def recompiles(x, n):
    return x * n + x.shape[0]


def closure_factory():
    scale = torch.tensor(3.0)

    def uses_closure(x):
        y = x * scale
        print("closure")
        return y + scale

    return uses_closure
