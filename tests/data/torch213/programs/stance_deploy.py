"""Deploying a compiled model with torch.compile's production controls, found by a fresh-eyes review.

`Model.forward` (inductor) runs an `allow_in_graph` helper (`scale_shift`), then two helpers kept out of the
graph on purpose: `log_stats` (`@torch.compiler.disable`) and `check_finite` (`torch._dynamo.disable` with a reason).
Warm-up: batch 4 then 8 (seq 16). Then `set_stance("fail_on_recompile")`: a request of seq 24 raises (caught and
printed), is retried under `set_stance("eager_on_recompile")` (runs eagerly, nothing compiled) and once under
`force_eager` (the debugging path). At the end the run saves `torch.compiler.save_cache_artifacts()`.
STANCE_VARIANT=warm: a fresh process with an empty inductor cache first loads those artifacts
(`torch.compiler.load_cache_artifacts`, the "mega-cache" warm start), then does the same.
STANCE_VARIANT=fixed: the warm-up marks dims 0 and 1 dynamic, so the seq-24 request needs no recompile.
The artifacts file is $STANCE_ARTIFACTS, else stance_artifacts.bin beside $TORCHINDUCTOR_CACHE_DIR's own cache
(each variant gets its own subdirectory of it, so the warm run can only hit what it loaded).
"""
import os
import tempfile

VARIANT = os.environ.get("STANCE_VARIANT", "cold")
ROOT = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or tempfile.mkdtemp()
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(ROOT, VARIANT)
ARTIFACTS = os.environ.get("STANCE_ARTIFACTS") or os.path.join(ROOT, "stance_artifacts.bin")

import torch  # noqa: E402
from torch import nn  # noqa: E402


@torch.compiler.allow_in_graph
def scale_shift(h):
    return h * 2.0 + 1.0


@torch.compiler.disable
def log_stats(h):
    print(f"mean {h.mean().item():.3f}")


@torch._dynamo.disable(reason="validation runs eagerly in production")
def check_finite(h):
    assert torch.isfinite(h).all()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        h = scale_shift(self.proj(x))
        log_stats(h)
        check_finite(h)
        return self.out(h).relu()


if VARIANT == "warm":
    with open(ARTIFACTS, "rb") as f:
        print("loaded:", torch.compiler.load_cache_artifacts(f.read()))
model = torch.compile(Model().eval())
with torch.no_grad():
    for batch in (4, 8):  # warm-up
        x = torch.randn(batch, 16, 8)
        if VARIANT == "fixed":
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
        model(x)
    torch.compiler.set_stance("fail_on_recompile")
    request = torch.randn(2, 24, 8)
    try:
        model(request)
    except RuntimeError as e:
        print("refused:", str(e).splitlines()[0])
        with torch.compiler.set_stance("eager_on_recompile"):
            model(request)
    with torch.compiler.set_stance("force_eager"):
        model(request)
if VARIANT != "warm":
    artifacts, info = torch.compiler.save_cache_artifacts()
    with open(ARTIFACTS, "wb") as f:
        f.write(artifacts)
    print("saved:", info)
