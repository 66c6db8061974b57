"""A mixed-precision training step compiled whole, as a CPU user writes it (fresh-eyes review).

`train_step` is `@torch.compile`d and holds everything: the forward of a small MLP under
`torch.autocast("cpu", dtype=torch.float16)`, `scaler.scale(loss).backward()` with
`scaler = torch.amp.GradScaler("cpu")` (supported on CPU in 2.13), `scaler.step(opt)`, `scaler.update()` and
`opt.zero_grad()`; 3 steps, the same shapes.
AMP_VARIANT=clip adds `scaler.unscale_(opt)` and `torch.nn.utils.clip_grad_norm_` before the step and prints
`loss.item()` each step, inside the compiled function.
AMP_VARIANT=fixed follows the docs: only the model is compiled (`torch.compile(model)`), the loss, the scaler, the
backward and the optimizer run outside the compiled code.
Run: TORCH_TRACE=/tmp/t python amp_train_step.py
"""
import os

import torch

VARIANT = os.environ.get("AMP_VARIANT", "")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu")
loss_fn = torch.nn.MSELoss()


@torch.compile
def train_step(x, y):
    with torch.autocast("cpu", dtype=torch.float16):
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
    with torch.autocast("cpu", dtype=torch.float16):
        loss = loss_fn(compiled_model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    return loss


step_fn = fixed_step if VARIANT == "fixed" else train_step
for step in range(3):
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    loss = step_fn(x, y)
