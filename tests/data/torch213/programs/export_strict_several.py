"""Scenario: several strict torch.export calls in one program (one process, plain TORCH_TRACE).

Run standalone:  TORCH_TRACE=/tmp/trace python programs/export_strict_several.py

Strict export traces with Dynamo; torch logs each trace's `compilation_metrics` with `"compile_id": null` and a
Python stack through the export call:
1. `Gate`, exported at line 37: branches on a tensor's value (line 16): fails.
2. `Scale`, exported at line 42: exports.
3. `Take`, exported at line 47: compares `k.item()` with a size (line 29): fails (data-dependent guard).
"""
import torch


class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # a branch on data: strict export cannot trace it
            return x * 2
        return x - 1


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 3


class Take(torch.nn.Module):
    def forward(self, x, k):
        n = k.item()
        if n > x.shape[0]:  # a guard on a data-dependent value
            n = x.shape[0]
        return x[:n].sum()


def main():
    x = torch.randn(6)
    try:
        torch.export.export(Gate(), (x,), strict=True)
        print("gate exported")
    except Exception as e:
        print("gate export failed:", type(e).__name__, str(e)[:300])
    try:
        torch.export.export(Scale(), (x,), strict=True)
        print("scale exported")
    except Exception as e:
        print("scale export failed:", type(e).__name__, str(e)[:300])
    try:
        torch.export.export(Take(), (x, torch.tensor(3)), strict=True)
        print("take exported")
    except Exception as e:
        print("take export failed:", type(e).__name__, str(e)[:300])


if __name__ == "__main__":
    main()
