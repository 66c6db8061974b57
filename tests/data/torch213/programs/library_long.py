"""mylib's Net3 (forward(self, x, target), which passes target on to loss3, compiled apart after its graph break)
called with names and expressions a label must not cut or misread. Backend eager.

LONG_VARIANT=ident: `cm(torch.ones(2, 4), encoder_hidden_states_...)` (line 21): forward's target is a plain name of
67 characters (2, 3, 6 rows; the log shows 2 and 3: the third reuses [0/1]'s dynamic size), said whole everywhere.
LONG_VARIANT=mixed: `cm(torch.ones(n, 4) * 1.0, t)` (line 23), x of 2, 3, 3 rows and t of 2, 2, 5: two sizes
change, forward's x (an expression: no name to pass to mark_dynamic, so words) at the second call and its target (the
user's t: code) at the third.
"""
import os

import torch
from mylib import Net3

VARIANT = os.environ["LONG_VARIANT"]
cm = torch.compile(Net3(), backend="eager")
for n, m in ((2, 2), (3, 2), (3, 5)):
    encoder_hidden_states_for_cross_attention_with_padding_mask_applied = torch.randn(n + m - 2, 4)
    t = torch.randn(m, 4)
    if VARIANT == "ident":
        out = cm(torch.ones(2, 4), encoder_hidden_states_for_cross_attention_with_padding_mask_applied)
    else:
        out = cm(torch.ones(n, 4) * 1.0, t)
print(out)
