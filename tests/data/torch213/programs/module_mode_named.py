"""Modes and requires_grad set through loops over a list or tuple the program names: the loop's modules are the
literal's, bound to a name once (`frozen = [model.backbone, model.neck]`), not any module.

`Net` holds a backbone, a neck and a head, each a Sequential of a Linear and a Dropout. The program steps; freezes the
backbone's and the neck's parameters in a loop over each module's parameters nested in a loop over the list `frozen`;
steps; in one step turns the neck's and the head's dropout off through a loop over the tuple `quiet` and the
backbone's dropout off by assigning its flag; steps.
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1))
        self.neck = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1))
        self.head = nn.Sequential(nn.Linear(16, 4), nn.Dropout(0.1))

    def forward(self, x):
        return self.head(self.neck(self.backbone(x).relu()).relu())


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
    frozen = [model.backbone, model.neck]
    for m in frozen:
        for p in m.parameters():
            p.requires_grad = False  # freeze the backbone and the neck
    step(compiled, opt, x, y)
    quiet = model.neck[1], model.head[1]
    for m in quiet:
        m.eval()  # the neck's and the head's dropout off
    model.backbone[1].training = False  # the backbone's dropout off
    step(compiled, opt, x, y)


if __name__ == "__main__":
    main()
