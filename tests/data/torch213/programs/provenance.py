"""Scenario: inductor provenance tracking for a forward+backward compile.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/provenance.py
(make_traces.py additionally sets INDUCTOR_PROVENANCE=1 in the environment;
the program also sets the 2.13 config knob itself so it works standalone.)

`torch._inductor.config.trace.provenance_tracking_level = 1` (env
INDUCTOR_PROVENANCE=1) makes inductor emit the artifacts
`inductor_provenance_tracking_node_mappings` and
`inductor_provenance_tracking_kernel_stack_traces` for each compiled graph
(here: the AOT forward and the AOT backward of a Linear+ReLU module).
"""
import torch

torch._inductor.config.trace.provenance_tracking_level = 1


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


def main():
    torch.manual_seed(0)
    model = Tiny()
    cmodel = torch.compile(model)
    x = torch.randn(2, 4)
    cmodel(x).sum().backward()


if __name__ == "__main__":
    main()
