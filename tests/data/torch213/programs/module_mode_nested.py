"""Modes and requires_grad set through nested loops: the inner loop's module is the outer loop's variable.

`Net` holds a backbone (a Sequential of a Linear and a Dropout) and a head (a Sequential of a Linear and a Dropout).
The program steps; freezes the backbone's parameters in a loop over its parameters nested in a loop over
model.backbone.children(); steps; in one step turns the head's dropout off through a loop over each head module's
children (nested in a loop over model.head.modules()) and the backbone's dropout off by assigning its flag; steps.
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1))
        self.head = nn.Sequential(nn.Linear(16, 4), nn.Dropout(0.1))

    def forward(self, x):
        return self.head(self.backbone(x).relu())


def step(compiled, opt, x, y):
    loss = nn.functional.mse_loss(compiled(x), y)
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
    for layer in model.backbone.children():
        for p in layer.parameters():
            p.requires_grad = False  # freeze the backbone
    step(compiled, opt, x, y)
    for m in model.head.modules():
        for c in m.children():
            c.eval()  # the head's dropout off
    model.backbone[1].training = False  # the backbone's dropout off
    step(compiled, opt, x, y)


if __name__ == "__main__":
    main()
