"""CUDA scenario: a steady-state torch.profiler trace of a small MLP compiled with the default mode (no CUDA graphs),
warmed up first: its kernels take microseconds, and the GPU waits for the CPU to launch them. Run as
`compilescope run profile_launch_bound.py PROFILE.json`."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from profile_cudagraphs import MLP


def main(out):
    torch.manual_seed(0)
    compiled = torch.compile(MLP().cuda().eval())
    x = torch.randn(64, 512, device="cuda")
    with torch.no_grad():
        for _ in range(3):  # compile, autotune at the first run, warm up
            compiled(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                compiled(x)
            torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print("profile", out)


if __name__ == "__main__":
    main(sys.argv[1])
