"""Module state that recompiles: a fine-tuning loop that changes its compiled model between steps.

A user's training script (backend aot_eager, recompile_limit 8, the default) compiles `model` once, then, as
training scripts do: registers a forward hook on `model.head` after the first compiled call (to log activations),
runs validation with `model.eval()` under `torch.no_grad()` and goes back with `model.train()`, unfreezes the frozen
backbone halfway (`model.backbone.weight.requires_grad_(True)`), and sets a Python float attribute `model.scale` each
step (a warm-up factor). With MODULE_VARIANT=fixed: the hook registered before torch.compile, the factor a buffer
filled in place (`model.scale.fill_(...)`), the hook keeping its newest value under a key the dict has from the start
(Dynamo guards a global's length); eval/train and the unfreeze kept (expected). late_key: fixed, but the dict empty.
"""
import os

import torch
from torch import nn

FIXED = os.environ.get("MODULE_VARIANT") in ("fixed", "late_key")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(16, 16)
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(16, 4)
        if FIXED:
            self.register_buffer("scale", torch.tensor(1.0))
        else:
            self.scale = 1.0

    def forward(self, x):
        h = self.dropout(self.backbone(x).relu())
        return self.head(h) * self.scale


activations = []  # one entry per call: a list that grows while the compiled code runs
latest = {} if os.environ.get("MODULE_VARIANT") == "late_key" else {"head": torch.tensor(0.0)}  # fixed: its key at once


def log_activation(module, inputs, output):
    if FIXED:
        latest["head"] = output.detach().norm()
    else:
        activations.append(output.detach().norm())


def main():
    torch.manual_seed(0)
    model = Net()
    model.backbone.requires_grad_(False)  # frozen backbone: only the head trains at first
    if FIXED:
        model.head.register_forward_hook(log_activation)
    compiled = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD([p for p in model.parameters()], lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    for step in range(6):
        if FIXED:
            model.scale.fill_(min(1.0, 0.5 + 0.1 * step))
        else:
            model.scale = min(1.0, 0.5 + 0.1 * step)  # warm-up factor, a new Python float each step
        loss = nn.functional.mse_loss(compiled(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step == 0 and not FIXED:
            model.head.register_forward_hook(log_activation)  # log activations from now on
        if step == 2:
            model.eval()  # validation
            with torch.no_grad():
                compiled(x)
            model.train()
        if step == 3:
            model.backbone.requires_grad_(True)  # unfreeze the backbone for fine-tuning


if __name__ == "__main__":
    main()
