"""A model compiled with backend="aot_eager" (a user checking whether Inductor is at fault), profiled on CPU: its
compiled regions run, their ops as ATen ops, no Inductor kernel. Written to PROFILE_DIR (default: the current
directory) as compiled.profile.json.

PROFILE_VARIANT=mixed: each profiled call's output also goes through gelu eagerly, so aten::gelu ran both inside the
compiled regions (the region's graph) and outside them (the user's eager code)."""
import os

import torch
from torch.profiler import ProfilerActivity, profile


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x)) * 2


def main():
    torch.manual_seed(0)
    model = torch.compile(Block(), backend="aot_eager")
    x = torch.randn(8, 16)
    with torch.no_grad():
        model(x)  # compiled before the profile: it holds the runs alone
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                y = model(x)
                if os.environ.get("PROFILE_VARIANT") == "mixed":
                    torch.nn.functional.gelu(y)
    prof.export_chrome_trace(os.path.join(os.environ.get("PROFILE_DIR", "."), "compiled.profile.json"))


if __name__ == "__main__":
    main()
