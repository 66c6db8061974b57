"""The fixed twin of triton_op_mutation.py: the same op, declared mutates_args={"x"} (CUDA; recorded on an H200: logs/triton_op_mutation_fixed.log.gz).

`scale_kernel` stores `x * factor` back through `x_ptr` (its input) as well as into `out_ptr`; `mylib::scale_tr`
launches it with `wrap_triton` on the op's argument x, and declares that it writes nothing. The torch.library docs
ask for mutates_args to name what the op writes. Unlike custom_op, torch.compile decomposes a triton_op in AOTAutograd
and finds the kernel's stores itself (torch/_library/triton.py), so whether the compiled results differ from eager's
is what this run records, not what it assumes:
  shift_then_scale reads x (x + 1) before calling scale_tr, and uses both;
  scale_unused calls scale_tr and ignores its result, then reads x.
The program prints what each computes, eager and compiled, from the same input, and how x differs afterwards.
Its as-written twin is triton_op_mutation.py (mutates_args=()).
Run: TORCH_TRACE=/tmp/t python triton_op_mutation_fixed.py
"""
import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

torch.manual_seed(0)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * factor, mask=mask)
    tl.store(out_ptr + offs, x * factor, mask=mask)


@triton_op("mylib::scale_tr", mutates_args={"x"})
def scale_tr(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    wrap_triton(scale_kernel)[(triton.cdiv(n, 1024),)](x, out, n, factor, BLOCK=1024)
    return out


def shift_then_scale(x):
    shifted = x + 1
    scaled = scale_tr(x, 2.0)
    return shifted * scaled


def scale_unused(x):
    scale_tr(x, 2.0)
    return x + 1


for fn in (shift_then_scale, scale_unused):
    x = torch.randn(4096, device="cuda")
    with torch.no_grad():
        x_eager, x_compiled = x.clone(), x.clone()
        expected = fn(x_eager)
        got = torch.compile(fn)(x_compiled)
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"x afterwards differs by {(x_compiled - x_eager).abs().max().item():.3g}", flush=True)
