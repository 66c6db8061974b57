"""Scenario: compiled autograd, and a backward that recompiles (aot_eager backend, CPU).

Run standalone:  TORCH_TRACE=/tmp/trace python programs/compiled_autograd.py

With torch._dynamo.config.compiled_autograd on, loss.backward() inside a compiled
function is itself traced and compiled: its compile ids carry the compiled autograd
graph's number, [!0/...]. Compiled autograd caches its graph by the autograd nodes
and their inputs' sizes. Two steps of batch 2 reuse it; a step of batch 3 changes
the sizes, so compiled autograd compiles again and logs why
(artifact compiled_autograd_compile_reasons), as a plain Dynamo recompile logs its
failed guard.
"""
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def train_step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss


def main():
    torch.manual_seed(0)
    torch._dynamo.config.compiled_autograd = True  # read when torch.compile wraps the function: set it first
    step = torch.compile(train_step, backend="aot_eager")
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in (2, 2, 3):
        opt.zero_grad()
        step(model, torch.randn(batch, 4))
        opt.step()
    print("done")


if __name__ == "__main__":
    main()
