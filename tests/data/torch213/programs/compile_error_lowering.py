"""Scenario: Inductor *lowering* fails (not C++ compilation) and dynamo falls back to eager.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/compile_error_lowering.py
Exits 0.

A custom op `compilescope_test::boom` has an eager kernel and a fake kernel (so
Dynamo and AOTAutograd trace it), and an Inductor lowering that raises: the
failure happens in GraphLowering.run, like the troubleshooting guide's
`aten._foobar` example. `suppress_errors = True` makes dynamo log it and run eagerly.
"""
import torch
from torch._inductor.lowering import register_lowering

torch._dynamo.config.suppress_errors = True


@torch.library.custom_op("compilescope_test::boom", mutates_args=())
def boom(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@boom.register_fake
def _(x):
    return torch.empty_like(x)


@register_lowering(torch.ops.compilescope_test.boom.default)
def _boom_lowering(x):
    raise NotImplementedError("compilescope_test::boom has no Inductor lowering (injected for testing)")


def f(x):
    y = torch.relu(x)
    return boom(y) + 1  # lowering fails here


def main():
    cf = torch.compile(f)
    x = torch.randn(8)
    out = cf(x)  # lowering fails -> eager fallback
    torch.testing.assert_close(out, f(x))
    print("fallback ok")


if __name__ == "__main__":
    main()
