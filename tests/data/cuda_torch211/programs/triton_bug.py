"""CUDA scenario for `compilescope diagnose`: Inductor's Triton code made to fail on purpose (torch's testing hook).

TRITON_BUG=compile_error: the generated Triton kernel for `relu` does not compile (the backend stage fails);
TRITON_BUG=accuracy: it computes the wrong values (only diagnose --accuracy sees it).

    TRITON_BUG=compile_error compilescope diagnose --minify triton_bug.py
    TRITON_BUG=accuracy compilescope diagnose --accuracy triton_bug.py
"""
import os

import torch
import torch._inductor.config as inductor_config

inductor_config.triton.inject_relu_bug_TESTING_ONLY = os.environ.get("TRITON_BUG", "compile_error")


def block(x, w):
    return torch.relu(x @ w) * 2 + x.sum(1, keepdim=True)


def main():
    x = torch.randn(64, 64, device="cuda")
    w = torch.randn(64, 64, device="cuda")
    out = torch.compile(block)(x, w)
    torch.testing.assert_close(out, block(x, w))
    print("ok")


if __name__ == "__main__":
    main()
