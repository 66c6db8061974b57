"""Module state changed after compiling: a model compiled once, then changed between compiled calls.

MODSWAP_VARIANT=hook: a forward hook on `model.block` registered after the first compiled call (to count calls), and
nothing else changed. swap: `model.block = Block()` after the first compiled call (a fresh block of the same type,
as a user reloading a sub-network). fixed: the hook registered before torch.compile, and the block's new weights
loaded in place (`model.block.load_state_dict(...)`). Every variant then validates with `model.eval()` under
`torch.no_grad()` (an expected recompile). The program prints how many times the hook ran against eager's count.
"""
import os

import torch
from torch import nn

VARIANT = os.environ.get("MODSWAP_VARIANT", "hook")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.norm = nn.BatchNorm1d(8)  # batch statistics in training, running ones in eval: reads self.training

    def forward(self, x):
        return self.norm(self.linear(x)).relu()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.block(x))


hook_calls = torch.zeros((), dtype=torch.int64)  # a tensor counted in place: no Python value for Dynamo to guard


def count_calls(module, inputs, output):
    hook_calls.add_(1)


def main():
    torch.manual_seed(0)
    model = Model()
    if VARIANT == "fixed":
        model.block.register_forward_hook(count_calls)
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(4, 8)
    compiled(x)
    if VARIANT == "hook":
        model.block.register_forward_hook(count_calls)  # count the block's calls from now on
    elif VARIANT == "swap":
        model.block = Block()  # a fresh block, as when reloading a sub-network
    else:
        model.block.load_state_dict(Block().state_dict())  # the same block, new weights in place
    same = torch.allclose(compiled(x), model(x))  # training mode: batch statistics, the same in both
    compiled(x)
    model.eval()  # validation
    with torch.no_grad():
        compiled(x)
    model.train()
    # eager runs a hook at every call from its registration: the compiled ones, and model(x) above
    expected = {"hook": 4, "swap": 0, "fixed": 5}[VARIANT]
    print(f"compiled matches eager after the change: {same}; hook ran {int(hook_calls)} times (eager: {expected})")


if __name__ == "__main__":
    main()
