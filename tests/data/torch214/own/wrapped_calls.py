"""Code that torch runs inside wrappers of its own, compiled (recorded with torch 2.14; backend="eager": Dynamo only).

- Net.block is a torch.compiler.nested_compile_region: Dynamo traces torch's wrapper (`inner` in
  _higher_order_ops/invoke_subgraph.py), so the guards on x name that wrapper's line, not forward's. Compiled with
  dynamic=False, the second batch size recompiles forward (and no symbol's stack names the wrapper's file in full).
- row_peaks is a torch._dynamo.nonstrict_trace function compiled itself: the frame Dynamo compiles is torch's wrapper
  (`inner` in _dynamo/external_utils.py); tracing the user's .tolist() inside fails (UserError), every call.
- scaled reads a tensor's value with .item(): a graph break, or with WRAPPED_VARIANT=scalars
  (capture_scalar_outputs) an unbacked symbol in the graph, for `compilescope diff`.
"""
import os

import torch

if os.environ.get("WRAPPED_VARIANT") == "scalars":
    torch._dynamo.config.capture_scalar_outputs = True


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    @torch.compiler.nested_compile_region
    def block(self, x):
        return torch.relu(self.proj(x))

    def forward(self, x):
        h = self.block(x)
        return self.block(h) + h


@torch._dynamo.nonstrict_trace
def row_peaks(t):
    return torch.tensor(t.abs().amax(dim=-1).tolist())


def scaled(x):
    s = x.abs().max().item()
    return x / s


def main():
    torch.manual_seed(0)
    net = torch.compile(Net(), backend="eager", dynamic=False)
    peaks = torch.compile(row_peaks, backend="eager", fullgraph=True)
    cscaled = torch.compile(scaled, backend="eager")
    for batch in (4, 6):
        x = torch.randn(batch, 8)
        net(x)
        cscaled(x)
        try:
            peaks(x)
        except torch._dynamo.exc.UserError as e:
            print("row_peaks:", str(e).splitlines()[0])


if __name__ == "__main__":
    main()
