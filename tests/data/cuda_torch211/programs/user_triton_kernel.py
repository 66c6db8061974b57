"""A user's own Triton kernel called inside a compiled function, on the GPU.

`scaled_add` launches the `@triton.jit` kernel `scaled_add_kernel` (line 21) with a grid over the elements (line 34);
`layer` is `@torch.compile`d and calls it between PyTorch ops (line 45), so Dynamo traces the launch into the graph
and Inductor emits the user's kernel beside its own. Called with 4,096 then 8,192 elements: the second call
recompiles (the size changed), then runs dynamic.
TRITON_VARIANT=triton_op wraps the launch as a custom op with `torch.library.triton_op` and `wrap_triton`, the
documented way to make a Triton kernel an operator that torch.compile can see into.
Run: TORCH_TRACE=/tmp/t python user_triton_kernel.py
"""
import os

import torch
import triton
import triton.language as tl

AS_OP = os.environ.get("TRITON_VARIANT") == "triton_op"


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + alpha * y, mask=mask)


def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    launch = torch.library.wrap_triton(scaled_add_kernel) if AS_OP else scaled_add_kernel
    launch[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out


if AS_OP:
    scaled_add = torch.library.triton_op("mylib::scaled_add", scaled_add, mutates_args=())


@torch.compile
def layer(x, y):
    h = torch.relu(x) * 2
    return scaled_add(h, y, 0.5).sum()


for n in (4096, 8192, 16384):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    print(f"n={n}: {layer(x, y).item():.3f} (eager {(torch.relu(x) * 2 + 0.5 * y).sum().item():.3f})")
