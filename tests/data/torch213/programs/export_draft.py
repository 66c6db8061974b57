"""Scenario: torch.export.draft_export of a module with data-dependent ops, under TORCH_DTRACE.

Run standalone:  TORCH_DTRACE=/tmp/trace python programs/export_draft.py

TORCH_DTRACE (torch/_logging/_internal.py, 2.13) is an alternative to
TORCH_TRACE: it sets the same trace directory *and* turns on
`dtrace_structured(...)` events (e.g. `guard_added` with frame locals,
`expression_created`, `propagate_real_tensors_provenance`,
`create_unbacked_symbol` details), which plain TORCH_TRACE does not emit.

Without TORCH_DTRACE, draft_export still writes its captured trace, to
<tempdir>/export_<user>/ (torch/export/_draft_export.py CaptureStructuredTrace).

The module calls `.item()` and `nonzero()` (data-dependent -> unbacked symbols)
and then branches on the `.item()` value, which draft_export resolves with real
tensor propagation and reports in its report instead of failing.
"""
import torch


class M(torch.nn.Module):
    def forward(self, x, y):
        n = y.item()  # unbacked symint
        idx = torch.nonzero(x)  # data-dependent output size
        if n > 2:  # data-dependent guard -> resolved by real-tensor propagation
            return x[:n].sum() + idx.shape[0]
        return x.sum() - idx.shape[0]


def main():
    x = torch.tensor([1.0, 0.0, 2.0, 3.0, 0.0, 4.0])
    y = torch.tensor(4)
    ep = torch.export.draft_export(M(), (x, y))
    print(ep._report)
    torch.testing.assert_close(ep.module()(x, y), M()(x, y))


if __name__ == "__main__":
    main()
