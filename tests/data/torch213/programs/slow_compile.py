"""A slow compile for the compile-time views: a model of distinct small blocks, compiled by inductor, and a helper
compiled with dynamic=False that is called with a Python int that changes every call, so it recompiles each time.

Run twice with one TORCHINDUCTOR_CACHE_DIR (make_traces.py: slow_compile_cold, then slow_compile_warm): the second
run's FX graph and AOTAutograd lookups hit what the first compiled.
"""
import torch


class Block(torch.nn.Module):
    def __init__(self, i):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.i = i

    def forward(self, x):
        y = self.lin(x)
        # a different activation per block, so the graph is not one pattern repeated
        if self.i % 3 == 0:
            y = torch.nn.functional.gelu(y)
        elif self.i % 3 == 1:
            y = torch.tanh(y) * 0.5
        else:
            y = torch.sigmoid(y) + y
        return x + y


class Model(torch.nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(i) for i in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


model = torch.compile(Model())


@torch.compile(dynamic=False)
def shift(x, n):
    return (x + n).relu()


torch.manual_seed(0)
x = torch.randn(4, 8)
with torch.no_grad():
    model(x)
    for n in range(4):  # [1/0] for n == 0, then [1/1], [1/2], [1/3]: one recompile per value
        shift(x, n)
print("done")
