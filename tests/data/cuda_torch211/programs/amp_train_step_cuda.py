"""A mixed-precision training step on the GPU, compiled whole (the CUDA twin of torch213's amp_train_step).

`train_step` is `@torch.compile`d and holds everything: the forward of an MLP under
`torch.autocast("cuda", dtype=torch.float16)`, `scaler.scale(loss).backward()` with
`scaler = torch.amp.GradScaler("cuda")`, `scaler.step(opt)`, `scaler.update()` and `opt.zero_grad()`; 3 steps,
the same shapes.
AMP_VARIANT=clip adds `scaler.unscale_(opt)` and `torch.nn.utils.clip_grad_norm_` before the step and prints
`loss.item()` each step, inside the compiled function.
AMP_VARIANT=fixed follows the AMP recipe: only the model is compiled (`torch.compile(model)`), the loss, the scaler,
the backward and the optimizer run outside the compiled code.
Run: TORCH_TRACE=/tmp/t python amp_train_step_cuda.py
"""
import os

import torch

VARIANT = os.environ.get("AMP_VARIANT", "")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(256, 1024)
        self.fc2 = torch.nn.Linear(1024, 64)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model = MLP().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda")
loss_fn = torch.nn.MSELoss()


@torch.compile
def train_step(x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    if VARIANT == "clip":
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        print(f"loss {loss.item():.4f}")
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    return loss


compiled_model = torch.compile(model)


def fixed_step(x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss_fn(compiled_model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    return loss


step_fn = fixed_step if VARIANT == "fixed" else train_step
for step in range(3):
    x, y = torch.randn(128, 256, device="cuda"), torch.randn(128, 64, device="cuda")
    loss = step_fn(x, y)
print(f"final loss {loss.item():.4f}, scale {scaler.get_scale():.0f}")
