"""The compiled optimizer step of PyTorch's recipe with a long cosine schedule (CosineAnnealingLR, T_max=10000):
its second learning rate, 0.000999999975..., differs from the first, 0.001, past the 8th significant digit."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32))
opt = torch.optim.Adam(model.parameters(), lr=0.001)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10000)


@torch.compile
def opt_step():
    opt.step()


x = torch.randn(8, 32)
for _ in range(3):
    model(x).sum().backward()
    opt_step()
    print("lr", repr(opt.param_groups[0]["lr"]))
    sched.step()
    opt.zero_grad()
