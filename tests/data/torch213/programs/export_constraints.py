"""Scenario: a torch.export user's first exports, found by a fresh-eyes review (one process, plain TORCH_TRACE).

Run standalone:  TORCH_TRACE=/tmp/trace python programs/export_constraints.py   (EXPORT_VARIANT=fixed: the fixed code)

1. `Encoder` (non-strict `torch.export.export`, line 52) with `dynamic_shapes={"tokens": {0: Dim("batch"),
   1: Dim("seq", min=2, max=128)}}`: its 32-row position table (line 30) allows seq <= 32, and line 31 reshapes to
   batch 2, so torch raises "Constraints violated (batch, seq)!" with "Suggested fixes: seq = Dim('seq', max=32),
   batch = 2". torch logs no error for it: only the guards (`s27 <= 32`, `Eq(s52, 2)`) and the specialization.
2. `TopK` reads `k.item()` and `nonzero` and branches on them (line 40): strict export (line 63, Dynamo) fails with
   a UserError (GuardOnDataDependentSymNode: "Could not guard on data-dependent expression u0 > u1"), logged as a
   `compilation_metrics` with no compile id; non-strict export fails the same way (only a `make_fx_fail_partial`
   artifact is logged); `draft_export` (line 67) succeeds with one issue, logged in its own trace file, not here.
EXPORT_VARIANT=fixed: seq's range is [2, 32], batch left static, and `torch._check(n <= keep.shape[0])` replaces the
branch, so every export succeeds.
"""
import os
import torch
from torch.export import Dim

FIXED = os.environ.get("EXPORT_VARIANT") == "fixed"


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)
        self.pos = torch.nn.Parameter(torch.zeros(32, 16))  # position table: 32 positions

    def forward(self, tokens):
        h = self.proj(tokens) + self.pos[: tokens.shape[1]]
        return h.reshape(2, -1)  # batch fixed at 2 by this line


class TopK(torch.nn.Module):
    def forward(self, scores, k):
        n = k.item()
        keep = torch.nonzero(scores > 0)
        if FIXED:
            torch._check(n <= keep.shape[0])
        elif n > keep.shape[0]:
            n = keep.shape[0]
        return scores[:n].sum() + keep.shape[0]


def export_encoder():
    tokens = torch.randn(2, 8, 16)
    if FIXED:
        shapes = {"tokens": {1: Dim("seq", min=2, max=32)}}
    else:
        shapes = {"tokens": {0: Dim("batch"), 1: Dim("seq", min=2, max=128)}}
    try:
        ep = torch.export.export(Encoder(), (tokens,), dynamic_shapes=shapes)
        print("encoder exported:", ep.range_constraints)
    except Exception as e:
        print("encoder export failed:", type(e).__name__, e)


def export_topk():
    scores = torch.tensor([0.5, -1.0, 2.0, 0.1, -0.3, 3.0])
    k = torch.tensor(3)
    for strict in (True, False):
        try:
            torch.export.export(TopK(), (scores, k), strict=strict)
            print(f"topk exported, strict={strict}")
        except Exception as e:
            print(f"topk export failed, strict={strict}:", type(e).__name__, str(e)[:600])
    ep = torch.export.draft_export(TopK(), (scores, k))
    print(ep._report)


if __name__ == "__main__":
    export_encoder()
    export_topk()
