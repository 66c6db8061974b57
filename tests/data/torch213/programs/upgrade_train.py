"""A small training loop a user records once per torch version, to see what an upgrade changed in its compile.

`TinyNet` (two Linear layers, GELU, LayerNorm) trains under `torch.compile` (Inductor) with SGD, batches 8, 12, 16,
marked dynamic (`mark_dynamic`), so nothing recompiles. `train_step` logs the loss with
`print` (a graph break) and reads it with `.item()` (a second break), then calls a custom op `upgrade::clip_scale`
(an opaque kernel for Inductor, with a fake implementation) and returns its result with the float.
"""
import torch
from torch import nn

torch.manual_seed(0)


@torch.library.custom_op("upgrade::clip_scale", mutates_args=())
def clip_scale(x: torch.Tensor, limit: float) -> torch.Tensor:
    return x.clamp(-limit, limit) * 0.5


@clip_scale.register_fake
def _(x, limit):
    return torch.empty_like(x)


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        return self.fc2(self.norm(torch.nn.functional.gelu(self.fc1(x))))


model = TinyNet()
opt = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile
def train_step(x, y):
    out = model(x)
    loss = torch.nn.functional.mse_loss(out, y)
    print("loss", loss.detach())
    loss.backward()
    value = loss.item()
    return clip_scale(out.detach(), 1.0), value


for batch in (8, 12, 16):
    opt.zero_grad()
    x, y = torch.randn(batch, 16), torch.randn(batch, 4)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(y, 0)
    train_step(x, y)
    opt.step()
