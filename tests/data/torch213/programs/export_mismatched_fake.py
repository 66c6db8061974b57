"""Scenario: torch.export.draft_export of a module calling a custom op whose fake kernel disagrees with its real one,
under TORCH_DTRACE.

Run standalone:  TORCH_DTRACE=/tmp/trace python programs/export_mismatched_fake.py

The op is defined with an overload named for its argument, as aten names its overloads (`aten::sum.dim_IntList`):
`compilescope_test::count.dims`, so torch logs it as `compilescope_test.count.dims`, a name ending in "s". Its real
kernel returns int64 counts, its fake kernel float32: draft_export's real-tensor propagation logs
`mismatched_fake_kernel` (dtype mismatch), infers a fake kernel from the real output and goes on.
"""
import torch

lib = torch.library.Library("compilescope_test", "DEF")  # noqa: TOR901 (kept alive for the op's lifetime)
lib.define("count.dims(Tensor x, int[] dims) -> Tensor")


@torch.library.impl(lib, "count.dims", "CompositeExplicitAutograd")
def count_dims(x, dims):
    return (x != 0).sum(dims)  # int64


@torch.library.register_fake("compilescope_test::count.dims", lib=lib)
def count_dims_fake(x, dims):
    return (x != 0).sum(dims).float()  # float32: disagrees with the real kernel's dtype


class M(torch.nn.Module):
    def forward(self, x):
        return torch.ops.compilescope_test.count.dims(x, [0]) + 1


def main():
    x = torch.tensor([[1.0, 0.0], [2.0, 3.0]])
    ep = torch.export.draft_export(M(), (x,))
    print(ep._report)


if __name__ == "__main__":
    main()
