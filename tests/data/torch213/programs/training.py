"""Scenario: a tiny training step under torch.compile (aot_eager backend, CPU).

Run standalone:  TORCH_TRACE=/tmp/trace python programs/training.py

A Linear(4, 4) + ReLU module is compiled with torch.compile(backend="aot_eager")
(AOT autograd without inductor codegen, to keep the log small; the same module
compiled with inductor forward+backward is what programs/provenance.py logs).
Per step: compiled forward, loss, loss.backward() (which triggers the lazily
compiled AOT backward graph -> `bwd_compilation_metrics`), and an SGD
optimizer step.  The optimizer step runs outside the compiled region: putting
it under torch.compile graph-breaks at loss.backward() and compiles the
optimizer as extra frames, which more than quadruples the log.
A second step reuses the compiled code (no new compile).
"""
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def main():
    torch.manual_seed(0)
    model = Tiny()
    cmodel = torch.compile(model, backend="aot_eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(2, 4)
    for _ in range(2):
        opt.zero_grad()
        loss = cmodel(x).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
