"""A training step with activation checkpointing and autocast, as a CPU user writes it (fresh-eyes review).

`Model.forward` (compiled) runs two residual MLP blocks, each through
`torch.utils.checkpoint.checkpoint(block, h, use_reentrant=False)`, under
`torch.autocast("cpu", dtype=torch.bfloat16)`; the loss, `loss.backward()` and the optimizer step run
outside the compiled code. Dynamo captures non-reentrant checkpointing as the higher-order op
`tag_activation_checkpoint`, and AOTAutograd's partitioner recomputes the blocks' ops in the backward graph.
CKPT_VARIANT=reentrant passes `use_reentrant=True` instead (torch.autograd.Function-based checkpointing);
CKPT_VARIANT=print has each block print its activations' shape, a graph break inside the checkpointed function.
CKPT_VARIANT=print_unrolled prints the same, but `Model.forward` calls checkpoint once per block without a loop: Dynamo
breaks the graph at each checkpoint call and runs that call eagerly (checkpoint itself is torch._disable_dynamo).
Run: TORCH_TRACE=/tmp/t python checkpoint_autocast.py
"""
import os

import torch
from torch.utils.checkpoint import checkpoint

VARIANT = os.environ.get("CKPT_VARIANT", "")
REENTRANT = VARIANT == "reentrant"
PRINT_STATS = VARIANT in ("print", "print_unrolled")
UNROLLED = VARIANT == "print_unrolled"


class Block(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.up(self.norm(x))
        if PRINT_STATS:
            print("block activations", h.shape)
        h = torch.nn.functional.gelu(h)
        return x + self.down(h)


class Model(torch.nn.Module):
    def __init__(self, dim=32, depth=2):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = torch.nn.Linear(dim, 1)

    def forward(self, x):
        if UNROLLED:  # the same two blocks, no loop
            x = checkpoint(self.blocks[0], x, use_reentrant=REENTRANT)
            x = checkpoint(self.blocks[1], x, use_reentrant=REENTRANT)
            return self.head(x)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=REENTRANT)
        return self.head(x)


torch.manual_seed(0)
model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
compiled = torch.compile(model)


def train_step(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = compiled(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


for step in range(3):
    x = torch.randn(16, 32, requires_grad=True)
    y = torch.randn(16, 1)
    print(f"step {step}: loss {train_step(x, y).item():.4f}")
