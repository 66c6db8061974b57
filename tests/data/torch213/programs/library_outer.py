"""The user's own module compiled around mylib's Net3, passing its arguments the other way round: Mine.forward(self,
a, target) returns `self.model(target, a)` (line 15), so Net3's target is the user's a (t: 2, 3, 5 rows) and its x the
user's target (2 rows always). loss3's print breaks the graph: Net3.forward and loss3 are compiled apart, called at
line 15. Backend eager."""
import torch
from mylib import Net3


class Mine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Net3()

    def forward(self, a, target):
        return self.model(target, a)


cm = torch.compile(Mine(), backend="eager")
target = torch.ones(2, 4)
for n in (2, 3, 5):
    t = torch.randn(n, 4)
    out = cm(t, target)
print(out)
