"""Scenario: deploying a small model with AOTInductor (export, compile and package, load, run at two batch sizes).

Run standalone:  TORCH_TRACE=/tmp/trace python programs/aoti_deploy.py   (AOTI_VARIANT=static: the batch dim forgotten)

`Head` (two Linear/ReLU layers, then a reshape by the batch size, line 30) is exported with a dynamic batch
`Dim("batch", min=2, max=64)` (line 37, export at line 39), compiled and packaged with `aoti_compile_and_package`
(line 41), loaded with `aoti_load_package` (line 42) and run at batch 4 and 8 (line 45).
AOTI_VARIANT=static: exported without `dynamic_shapes`, so the package is compiled for batch 4 only. The run at
batch 8 raises nothing: the package checks its inputs only with AOTI_RUNTIME_CHECK_INPUTS=1, and returns 4 rows
(torch warns on stderr from C++, Resize.cpp, that an output "was resized").
"""
import os
import tempfile

import torch
from torch.export import Dim

STATIC = os.environ.get("AOTI_VARIANT") == "static"


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 32)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return h.reshape(x.shape[0], 4, 8).sum(-1)


def main():
    torch.manual_seed(0)
    model = Head().eval()
    example = torch.randn(4, 16)
    shapes = None if STATIC else {"x": {0: Dim("batch", min=2, max=64)}}
    with torch.no_grad():
        ep = torch.export.export(model, (example,), dynamic_shapes=shapes)
    path = os.path.join(tempfile.mkdtemp(), "head.pt2")
    path = torch._inductor.aoti_compile_and_package(ep, package_path=path)
    runner = torch._inductor.aoti_load_package(path)
    for batch in (4, 8):
        try:
            out = runner(torch.randn(batch, 16))
            print(f"batch {batch}: output {tuple(out.shape)}")
        except Exception as e:
            print(f"batch {batch} failed:", type(e).__name__, str(e)[:400])


if __name__ == "__main__":
    main()
