"""CUDA scenario: a steady-state torch.profiler trace of an MLP compiled with mode="reduce-overhead" (CUDA graphs),
and of the same MLP eager, in one profile (record_function ranges "eager" and "compiled"). Run as
`compilescope run profile_cudagraphs.py PROFILE.json`: the log has the compile, the profile only the runs.

The compiled calls replay a CUDA graph: the profile's kernels are launched by cudaGraphLaunch, not one by one.
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function


class MLP(torch.nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main(out):
    torch.manual_seed(0)
    model = MLP().cuda().eval()
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(64, 512, device="cuda")
    with torch.no_grad():
        for _ in range(3):  # compile, warm up, record the CUDA graph; and warm eager up too (cuBLAS, the allocator)
            compiled(x)
            model(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("eager"):
                for _ in range(5):
                    model(x)
                torch.cuda.synchronize()
            with record_function("compiled"):
                for _ in range(5):
                    compiled(x)
                torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print("profile", out)


if __name__ == "__main__":
    main(sys.argv[1])
