"""Custom ops that write into their argument but declare mutates_args=() on the GPU (the CUDA twin of torch213's
custom_op_mutation): a silent wrong result.

The user wraps two kernels as torch.library custom ops, each with a fake kernel, and calls them in compiled code:
  mylib::scale multiplies its input in place (x.mul_(factor), line 27) and returns a copy;
  mylib::clamp_ clips its input in place (x.clamp_(-limit, limit), line 38) and returns a copy.
Both declare mutates_args=(), so torch.compile takes them for functional ops:
  shift_then_scale reads x (x + 1, line 48) before calling scale; if Inductor fuses that read into the Triton kernel
  after the call, it reads x already scaled;
  clamp_then_add ignores clamp_'s result (it wants the clip of x); AOTAutograd may drop the call as dead code, and
  the clip with it.
The program prints what each computes, eager and compiled, from the same input.
MUTOP_VARIANT=fixed: both declare mutates_args={"x"}: compiled matches eager.
Run: TORCH_TRACE=/tmp/t python custom_op_mutation_cuda.py
"""
import os

import torch

FIXED = os.environ.get("MUTOP_VARIANT") == "fixed"
MUTATES = {"x"} if FIXED else ()
torch.manual_seed(0)


@torch.library.custom_op("mylib::scale", mutates_args=MUTATES)
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    x.mul_(factor)
    return x.clone()


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)


@torch.library.custom_op("mylib::clamp_", mutates_args=MUTATES)
def clamp_(x: torch.Tensor, limit: float) -> torch.Tensor:
    x.clamp_(-limit, limit)
    return x.clone()


@clamp_.register_fake
def _(x, limit):
    return torch.empty_like(x)


def shift_then_scale(x):
    shifted = x + 1
    scaled = scale(x, 2.0)
    return shifted * scaled


def clamp_then_add(x):
    clamp_(x, 0.5)
    return x + 1


for fn in (shift_then_scale, clamp_then_add):
    x = torch.randn(1024, device="cuda")
    with torch.no_grad():
        x_eager, x_compiled = x.clone(), x.clone()
        expected = fn(x_eager)
        got = torch.compile(fn)(x_compiled)
    torch.cuda.synchronize()
    print(f"{fn.__name__}: eager {expected.sum().item():.4f} compiled {got.sum().item():.4f} "
          f"max abs diff {(got - expected).abs().max().item():.3g}; "
          f"x afterwards differs by {(x_compiled - x_eager).abs().max().item():.3g}", flush=True)
