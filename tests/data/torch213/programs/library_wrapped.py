"""mylib's NetWrapped, whose decorated forward's wrapper passes the call's keywords to another module's forward
(Inner's, `target(**kwargs)` with target = self.inner.forward), called `cm(input_ids=ids)` with ids of 2, 3, 5 rows.
Backend eager. Inner's forward is compiled apart (it prints): its input_ids is the user's ids, passed on by NetWrapped's
wrapper, and the frame is Inner's forward, not NetWrapped's.
"""
import torch
from mylib import NetWrapped

cm = torch.compile(NetWrapped(), backend="eager")
for n in (2, 3, 5):
    ids = torch.randn(n, 4)
    out = cm(input_ids=ids)
print(out)
