"""A line captured in more graphs than a list on the pages names (wording.LISTED, 8).

`Counter.forward` increments `self.step`, a module int attribute, so each call recompiles on its value (backend
aot_eager). The recompile limit is raised to 16, so the 12 calls make 12 graphs, [0/0] to [0/11], each capturing the
line `return x.sin() + 1`.
"""
import torch
from torch import nn

torch._dynamo.config.recompile_limit = 16


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1
        return x.sin() + 1


def main():
    x = torch.randn(4, 8)
    compiled = torch.compile(Counter(), backend="aot_eager")
    for _ in range(12):
        compiled(x)


if __name__ == "__main__":
    main()
