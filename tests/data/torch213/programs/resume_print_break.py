"""Scenario: a graph break inside a resume function (recorded as `compilescope run` records it).

`f` breaks at `if y.sum() > 0:` ([0/0], and [0/1], [0/2] on recompiles); the rest of `f` is the resume
function `torch_dynamo_resume_in_f_at_<if line>` ([1/0], [1/1]), which breaks again at `print("mid")`, and the rest
after that is `torch_dynamo_resume_in_f_at_<print line>` ([2/0], [2/1]). No graph captures the print line: what
says which compilations broke there is its break alone.
"""
import torch


def helper(x):
    return x.sin() + 1


@torch.compile
def f(x, n):
    y = helper(x) * n
    if y.sum() > 0:
        y = y + 1
    print("mid")
    return y.cos()


for n in (2, 3, 4):
    f(torch.randn(8), n)
f(torch.randn(16), 4)
