"""One model compiled once, called in float32 (line 19), then cast with m.double() and called in float64 (line 21):
a dtype recompile of self's parameters with one model, whose guard trees are those two models of one class would give.
Backend eager.
"""
import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.l1(x).relu()


m = MLP()
c = torch.compile(m, backend="eager")
print(c(torch.randn(4, 8)).dtype)
m.double()
print(c(torch.randn(4, 8, dtype=torch.float64)).dtype)
