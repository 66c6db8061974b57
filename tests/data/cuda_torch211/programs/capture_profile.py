"""CUDA scenario for the in-process API: `compilescope.capture(profile=True)` around a compiled
attention block's forward and backward on the GPU, then `cap.report()`.

    python capture_profile.py OUT_DIR

writes OUT_DIR/report (the report, with its Runtime page from the profile) and prints where the
TORCH_TRACE log and the torch.profiler trace went.
"""
import sys

import torch

import compilescope


class Block(torch.nn.Module):
    def __init__(self, dim=256, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ln2 = torch.nn.LayerNorm(dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                             is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


def main(out):
    torch.manual_seed(0)
    model = Block().cuda()
    compiled = torch.compile(model)
    x = torch.randn(8, 128, 256, device="cuda")
    with compilescope.capture(out=f"{out}/report", trace_dir=f"{out}/trace", fresh_cache=True, profile=True,
                              overwrite=True) as cap:
        for _ in range(5):
            compiled(x).sum().backward()
        torch.cuda.synchronize()
    print("log", cap.log)
    print("profile", cap.profile)
    print("report", cap.report())


if __name__ == "__main__":
    main(sys.argv[1])
