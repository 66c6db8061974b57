"""Modes and requires_grad set by assignment, from a trainer class: the lines that switch them are what the source
page marks for each recompile.

A `Trainer` holds the model as `self.model` and its compiled version as `self.compiled`; `validate` switches with
`self.model.eval()` / `self.model.train()` (a receiver that is an attribute chain). The program then freezes the
backbone by assigning each parameter's requires_grad in a loop, turns dropout off by assigning its training flag,
freezes the head's weight with requires_grad_(False), and sets the head's bias requires_grad to the True it already
is (no change).
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Linear(16, 16)
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.dropout(self.backbone(x).relu()))


class Trainer:
    def __init__(self, model):
        self.model = model
        self.compiled = torch.compile(model, backend="aot_eager")
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(self, x, y):
        loss = nn.functional.mse_loss(self.compiled(x), y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()

    def validate(self, x):
        self.model.eval()  # validation
        with torch.no_grad():
            self.compiled(x)
        self.model.train()


def main():
    torch.manual_seed(0)
    model = Net()
    trainer = Trainer(model)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    trainer.step(x, y)
    trainer.validate(x)
    for p in model.backbone.parameters():
        p.requires_grad = False  # freeze the backbone
    trainer.step(x, y)
    model.dropout.training = False  # no dropout from here on
    trainer.step(x, y)
    model.head.weight.requires_grad_(False)
    model.head.bias.requires_grad = True  # (it is already)
    trainer.step(x, y)


if __name__ == "__main__":
    main()
