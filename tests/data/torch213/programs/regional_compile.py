"""A transformer-ish model of identical blocks, compiled whole or per block (regional compilation), inductor.

REGIONAL_VARIANT picks how it is compiled:
  whole    (default) torch.compile(model): one frame, every block inlined into one graph
  regional for block in model.blocks: block.compile(): the block's forward is compiled once and reused by every
           instance (Dynamo inlines nn.Module calls, so the guards are on the block's parameters as inputs, not on
           its id); the embedding and the head run eagerly between the compiled blocks
  dynamic  torch.compile(model, dynamic=True)
The model is called with two batches of the same size (the second call compiles nothing).
"""
import os

import torch
import torch.nn.functional as F

VARIANT = os.environ.get("REGIONAL_VARIANT", "whole")


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(torch.nn.Module):
    def __init__(self, vocab=64, dim=32, heads=4, depth=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


torch.manual_seed(0)
model = Model().eval()
if VARIANT == "regional":
    for block in model.blocks:
        block.compile()
    compiled = model
elif VARIANT == "dynamic":
    compiled = torch.compile(model, dynamic=True)
else:
    compiled = torch.compile(model)

with torch.no_grad():
    for step in range(2):
        tokens = torch.randint(0, 64, (2, 16))
        out = compiled(tokens)
print("done", VARIANT, tuple(out.shape))
