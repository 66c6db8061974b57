"""A training step: forward and backward graphs compiled by Inductor, the optimizer step in eager."""

import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def main():
    torch.manual_seed(0)
    model = Tiny()
    cmodel = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 4)
    for _ in range(2):  # the second step reuses the compiled forward and backward
        opt.zero_grad()
        loss = cmodel(x).sum()
        loss.backward()  # compiles the backward graph lazily
        opt.step()


if __name__ == "__main__":
    main()
