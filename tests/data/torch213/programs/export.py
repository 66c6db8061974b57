"""Scenario: torch.export.export of a tiny module with a dynamic dim.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/export.py

Exports M (Linear(4, 3) + relu) with dim 0 of x declared dynamic via
`dynamic_shapes={"x": {0: Dim("batch", min=2, max=64)}}` twice:
  1. default export (strict=False in 2.13: non-strict tracer, no dynamo)
  2. strict=True export (traced by dynamo, so dynamo events appear)
Note: in 2.13 the `export` / `exported_program` events are emitted with
dtrace_structured, so they only appear under TORCH_DTRACE, not TORCH_TRACE.
"""
import torch
from torch.export import Dim


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x.shape[0]


def main():
    torch.manual_seed(0)
    m = M()
    x = torch.randn(8, 4)
    dynamic_shapes = {"x": {0: Dim("batch", min=2, max=64)}}
    # 1. default (non-strict) export
    ep = torch.export.export(m, (x,), dynamic_shapes=dynamic_shapes)
    assert ep.module()(torch.randn(5, 4)).shape == torch.Size([5, 3])
    print(ep.graph_signature)
    # 2. strict export: traced by dynamo, so dynamo events/compile ids appear
    ep_strict = torch.export.export(m, (x,), dynamic_shapes=dynamic_shapes, strict=True)
    assert ep_strict.module()(torch.randn(7, 4)).shape == torch.Size([7, 3])


if __name__ == "__main__":
    main()
