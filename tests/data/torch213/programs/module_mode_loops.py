"""Modes and requires_grad set through a loop's variable: the lines that switch them are what the source page marks.

`Net` holds a backbone Linear, 70 Dropouts in a ModuleList (more modules whose mode the guards pin than one
recompile's changes state_lines looks at) and a head Linear. The program steps; turns every Dropout off in a loop over
model.modules() and, in the same step, freezes the head's weight and bias on one line; steps; turns the Dropouts back
on with Net.dropout_on (a loop over self.drops.children()); steps; freezes the backbone in a loop over a tuple of its
parameters; steps. Then a function compiled of its own, rescale, is called with a second factor (a second frame,
recompiled, whose call lines the log quotes in this file).
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(16, 16)
        self.drops = nn.ModuleList(nn.Dropout(0.1) for _ in range(70))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        x = self.backbone(x).relu()
        for drop in self.drops:
            x = drop(x)
        return self.head(x)

    def dropout_on(self):
        for m in self.drops.children():
            m.training = True


@torch.compile(backend="aot_eager")
def rescale(x, factor):
    return x * factor


def step(compiled, opt, x, y):
    loss = nn.functional.mse_loss(compiled(x), y)
    if loss.requires_grad:  # (none does once all is frozen)
        loss.backward()
        opt.step()
        opt.zero_grad()


def main():
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    step(compiled, opt, x, y)
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.training = False  # dropout off
    model.head.weight.requires_grad_(False); model.head.bias.requires_grad_(False)  # noqa: E702
    step(compiled, opt, x, y)
    model.dropout_on()
    step(compiled, opt, x, y)
    for p in (model.backbone.weight, model.backbone.bias):
        p.requires_grad_(False)  # freeze the backbone
    step(compiled, opt, x, y)
    rescale(x, 2)
    rescale(x, 3)


if __name__ == "__main__":
    main()
