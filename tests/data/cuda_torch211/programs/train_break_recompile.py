"""CUDA scenario, run as `compilescope run -- python train_break_recompile.py`: a small MLP trained with
Inductor on the GPU, with a graph break in its forward and a recompile when the batch size changes.

- `forward` prints the loss scale it uses (a graph break: Dynamo cannot trace `print`), so it compiles
  as two graphs plus a resume function;
- 3 steps with batch 32, then 2 with batch 48: the size guard fails once, and the second frame
  is compiled with a dynamic batch dimension;
- the optimizer step runs eagerly (outside the compiled region).
"""
import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(256, 1024)
        self.down = torch.nn.Linear(1024, 256)
        self.norm = torch.nn.LayerNorm(256)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(self.norm(x)))
        print("scale", 0.5)  # graph break
        return x + 0.5 * self.down(h)


def main():
    torch.manual_seed(0)
    model = MLP().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = torch.compile(model)
    for batch in (32, 32, 32, 48, 48):
        x = torch.randn(batch, 256, device="cuda")
        loss = step(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    print("loss", float(loss))


if __name__ == "__main__":
    main()
