"""mylib's Net3.forward(self, x, target) called with the user's dict spread as keywords, `cm(**batch)` (line 12): its
item "x" is t (2, 3, 5 rows), its item "target" the user's own x (2 rows always). forward's x is batch["x"], not the
user's x. Backend eager."""
import torch
from mylib import Net3

cm = torch.compile(Net3(), backend="eager")
x = torch.ones(2, 4)
for n in (2, 3, 5):
    t = torch.randn(n, 4)
    batch = {"x": t, "target": x}
    out = cm(**batch)
print(out)
