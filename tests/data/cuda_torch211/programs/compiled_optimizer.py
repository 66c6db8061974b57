"""CUDA scenario, run as `compilescope run -- python compiled_optimizer.py`: PyTorch's recipe "Running the compiled
optimizer with an LR Scheduler" (ten Linear(1024, 1024) layers, Adam, LinearLR, `opt.step()` under torch.compile).

- By default Adam's `lr` is a Python float that LinearLR changes every step: the compiled `Adam.step` guards on it
  and recompiles once it changes;
- with OPT_LR=tensor it is `torch.tensor(0.01)`, the recipe's fix: the same steps compile once.
The scheduler wraps `opt.step` in lr_scheduler.py, which Dynamo skips, so `opt_step` breaks at that call while
Dynamo compiles Adam's own `step` as a frame of its own.
"""
import os

import torch


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, False, device="cuda") for _ in range(10)])
    lr = torch.tensor(0.01) if os.environ.get("OPT_LR") == "tensor" else 0.01
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

    @torch.compile(fullgraph=False)
    def opt_step():
        opt.step()

    x = torch.rand(16, 1024, device="cuda")
    for _ in range(8):
        model(x).sum().backward()
        opt_step()
        sched.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    print("lr", float(opt.param_groups[0]["lr"]))


if __name__ == "__main__":
    main()
