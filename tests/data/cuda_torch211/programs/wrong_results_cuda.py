"""Compiled model gives other numbers than eager, on the GPU (the CUDA twin of torch213's wrong_results).

`Normalize.forward` (compiled with Inductor, Triton kernels) standardises bf16 activations by hand, with the variance
as E[h*h] - E[h]**2, then applies dropout. The user compares the compiled output with eager's under the same seed and
prints the max-abs-diff of each:
  - dropout (training mode): Inductor draws its own random numbers (philox in Triton, from a seed it takes from
    torch's CUDA generator), not aten's bernoulli, so the same seed gives another mask; fallback_random = True makes
    the compiled code call the eager random ops;
  - bf16 (eval mode too): Inductor fuses the means, the subtraction and rsqrt into one kernel and keeps float32
    between them where eager rounds each op's result to bf16.
WRONG_VARIANT=fixed sets fallback_random = True and normalises in float32: compiled matches eager.
Run: TORCH_TRACE=/tmp/t python wrong_results_cuda.py
"""
import os

import torch

FIXED = os.environ.get("WRONG_VARIANT") == "fixed"
if FIXED:
    torch._inductor.config.fallback_random = True
DTYPE = torch.float32 if FIXED else torch.bfloat16


class Normalize(torch.nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = torch.nn.Dropout(p)

    def forward(self, x):
        h = x.to(DTYPE)
        mean = h.mean(-1, keepdim=True)
        var = (h * h).mean(-1, keepdim=True) - mean * mean
        y = (h - mean) * torch.rsqrt(var + 1e-5)
        return self.drop(y.float())


torch.manual_seed(0)
model = Normalize(p=0.1).cuda()
compiled = torch.compile(model)
features = torch.randn(256, 512, device="cuda") + 8

torch.manual_seed(1)
expected = model(features)
torch.manual_seed(1)
got = compiled(features)
print(f"train: max abs diff {(got - expected).abs().max().item():.3g}")

model.eval()
expected = model(features)
got = compiled(features)
print(f"eval: max abs diff {(got - expected).abs().max().item():.3g}")
