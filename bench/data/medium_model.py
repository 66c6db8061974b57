"""A mid-sized torch.compile workload whose TORCH_TRACE log is the benchmark's "4.6 MB-class" torch 2.13 log.

A small transformer block trained for a few steps with inductor (forward and
backward graphs, output code), called with a few sequence lengths so that it
recompiles and goes dynamic, plus a graph break.

    python bench/data/make_medium_log.py   # runs this under TORCH_TRACE and writes torch213_medium.log.gz
"""

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        if x.sum() > 0:  # a data-dependent branch: graph break
            x = x * 1.0
        return x + self.mlp(self.norm2(x))


def main():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = torch.compile(model)
    for seq in (8, 8, 12, 16):
        x = torch.randn(2, seq, 64)
        loss = step(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
