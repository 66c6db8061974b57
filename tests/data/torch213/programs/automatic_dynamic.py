"""A number argument that changes: Dynamo first compiles `scale` for factor == 2; at 3 that guard fails and Dynamo
recompiles once with factor as a symbol (automatic dynamic); 4 and 5 reuse that compile.
Run: TORCH_TRACE=/tmp/t python automatic_dynamic.py
"""
import torch


@torch.compile
def scale(x, factor):
    return x * factor + 1


for factor in (2, 3, 4, 5):
    print(factor, float(scale(torch.ones(8), factor).sum()))
