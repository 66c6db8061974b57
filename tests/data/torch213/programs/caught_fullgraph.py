"""Scenario: a fullgraph=True compile fails, the program catches it and compiles the function again without it.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/caught_fullgraph.py

Compile [0/0] fails (Unsupported: the print under fullgraph=True) and leaves no cache entry. The second
torch.compile of the same function compiles frame 0 again as [0/1] (restarted at the print, [0/1_1]), then its
resume function [1/0]. No guard failed: nothing was recompiled.
"""
import torch


def f(x):
    y = x + 1
    print("side effect")  # a graph break: an error under fullgraph=True
    return y * 2


if __name__ == "__main__":
    try:
        torch.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    except Exception as e:  # noqa: BLE001 - the point: the program goes on without fullgraph
        print("fullgraph failed, compiling without it:", type(e).__name__)
    print(torch.compile(f, backend="eager")(torch.ones(2)))
