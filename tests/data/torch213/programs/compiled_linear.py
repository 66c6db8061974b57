"""Scenario: torch.compile of a user's nn.Linear subclass that keeps nn.Linear's forward, called by a serving loop
whose batch size changes.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/compiled_linear.py

- `Projection` subclasses torch.nn.Linear and keeps its forward, which is torch's own code (a file Dynamo skips):
  torch.compile therefore runs the module through torch's wrap_inline `inner` (_dynamo/external_utils.py), and the
  frame it compiles is `inner`, whose `fn` is the Projection;
- `serve` calls the compiled module on batches of 4, 6 and 6 rows: [0/0] for 4, [0/1] for 6 (the batch size made
  dynamic, automatic dynamic shapes), the third call reuses [0/1];
- LINEAR_VARIANT=fixed marks the batch dimension dynamic before the first call (torch._dynamo.mark_dynamic): one
  compile.
"""
import os

import torch

FIXED = os.environ.get("LINEAR_VARIANT") == "fixed"


class Projection(torch.nn.Linear):
    """A user's Linear: its own initial weights, nn.Linear's forward."""

    def __init__(self, features_in: int, features_out: int):
        super().__init__(features_in, features_out)
        torch.nn.init.zeros_(self.bias)


def serve(model, batch_sizes):
    for rows in batch_sizes:
        x = torch.randn(rows, 8)
        if FIXED:
            torch._dynamo.mark_dynamic(x, 0)
        model(x)


torch.manual_seed(0)
compiled = torch.compile(Projection(8, 4), backend="eager")
serve(compiled, (4, 6, 6))
