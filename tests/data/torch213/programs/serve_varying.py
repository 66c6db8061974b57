"""An inference service whose requests vary, found by a fresh-eyes review of compilescope.

A small transformer (embedding, two attention/MLP blocks, a head) compiled with torch.compile serves
requests of varying batch size and sequence length under torch.inference_mode(). `Model.forward` branches on a
Python bool (`padded`: build a padding mask or not) and calls an lru_cache'd tokenizer helper (`pad_token`).
Requests, in order: 0-9 batch 1, seq 16; 10-19 seq 24 (a size mismatch at dim 1: automatic dynamic);
20-29 batch 4 (dim 0); 30-39 padded=True (the bool); request 50 is a health check run without
inference_mode (a grad-mode guard); request 60 has seq 1, below the dynamic dim's range (>= 2):
recompile_limit (5) is hit late in the run, and that request runs eagerly.
With SERVE_VARIANT=fixed the service pads to a bucket of 32 tokens, always passes a mask and
marks the batch dim dynamic (torch._dynamo.mark_dynamic), and runs every call under inference_mode.
Backend aot_eager: with inductor the same guards fail (checked by hand), but its kernels make the log ~500 KB gzipped.
"""
import functools
import os

import torch
from torch import nn

torch._dynamo.config.recompile_limit = 5
FIXED = os.environ.get("SERVE_VARIANT") == "fixed"
VOCAB, DIM = 64, 32


@functools.lru_cache
def pad_token(vocab):
    return vocab - 1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

    def forward(self, x, mask):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        att = q @ k.transpose(-2, -1) / DIM**0.5
        if mask is not None:
            att = att.masked_fill(~mask[:, None, :], float("-inf"))
        x = x + self.proj(att.softmax(-1) @ v)
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens, padded):
        mask = tokens != pad_token(VOCAB) if padded else None
        x = self.emb(tokens)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(x[:, -1])


torch.manual_seed(0)
model = torch.compile(Model().eval(), backend="aot_eager")


def handle(request_id, batch, seq, padded, health_check=False):
    tokens = torch.randint(0, VOCAB - 1, (batch, seq))
    if FIXED:
        bucket = torch.full((batch, 32), pad_token(VOCAB))
        bucket[:, :seq] = tokens
        torch._dynamo.mark_dynamic(bucket, 0)
        with torch.inference_mode():
            return model(bucket, True)
    if health_check:
        return model(tokens, padded)
    with torch.inference_mode():
        return model(tokens, padded)


for i in range(70):
    batch = 4 if 20 <= i < 30 else 1
    seq = 24 if 10 <= i < 20 else (1 if i == 60 else 16)
    handle(i, batch, seq, padded=30 <= i < 40, health_check=i == 50)
print("served 70 requests")
