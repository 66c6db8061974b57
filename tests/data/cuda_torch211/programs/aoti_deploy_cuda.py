"""Deploying a small model with AOTInductor on the GPU (the CUDA twin of torch213's aoti_deploy).

`Head` (two Linear/ReLU layers, then a reshape by the batch size, line 29) is exported with a dynamic batch
`Dim("batch", min=2, max=64)` (line 36, export at line 38), compiled and packaged with `aoti_compile_and_package`
(line 40: Triton kernels compiled to cubins inside the package), loaded with `aoti_load_package` (line 41) and run
at batch 4 and 8 (line 44).
AOTI_VARIANT=static: exported without `dynamic_shapes`, so the package is compiled for batch 4 only, and the run at
batch 8 is what the package does with an input it was not compiled for.
Run: TORCH_TRACE=/tmp/t python aoti_deploy_cuda.py
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
    model = Head().cuda().eval()
    example = torch.randn(4, 16, device="cuda")
    shapes = None if STATIC else {"x": {0: Dim("batch", min=2, max=64)}}
    with torch.no_grad():
        ep = torch.export.export(model, (example,), dynamic_shapes=shapes)
    path = os.path.join(tempfile.mkdtemp(), "head.pt2")
    path = torch._inductor.aoti_compile_and_package(ep, package_path=path)
    runner = torch._inductor.aoti_load_package(path)
    for batch in (4, 8):
        try:
            out = runner(torch.randn(batch, 16, device="cuda"))
            torch.cuda.synchronize()
            print(f"batch {batch}: output {tuple(out.shape)}")
        except Exception as e:
            print(f"batch {batch} failed:", type(e).__name__, str(e)[:400])


if __name__ == "__main__":
    main()
