"""The optimizer step compiled, as PyTorch's compiled-optimizer tutorial does it, with an LR scheduler.

Adam's learning rate is a Python float that `LinearLR` changes every step, so the compiled `Adam.step`
guards on its value and recompiles once it changes (the tutorial's fix: `lr=torch.tensor(0.01)`).
The scheduler wraps `opt.step` in a function of `lr_scheduler.py`, a file Dynamo skips: `opt_step` breaks
at that call and Dynamo compiles the optimizer's own `step` as frames of their own. torch's optimizer
breaks the graph on purpose in `_use_grad` (torch/optim/optimizer.py).
Run: TORCH_TRACE=/tmp/t python compiled_optimizer.py
"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)


@torch.compile
def opt_step():
    opt.step()


x = torch.randn(8, 32)
for _ in range(6):
    model(x).sum().backward()
    opt_step()
    sched.step()
    opt.zero_grad()
