"""CUDA scenario: `mode="reduce-overhead"` (CUDA graphs), three functions, two of which CUDA graphs skip.

- `residual` runs as a CUDA graph;
- `accumulate` adds into its input in place (a mutated input): Inductor skips CUDA graphs for it;
- `with_cpu_scalar` also takes a CPU tensor, so its graph has a CPU input: skipped too.

Each is called 4 times, so the graphed one is recorded, then replayed.
"""
import torch


def residual(x, w):
    return x + torch.tanh(x @ w)


def accumulate(acc, x):
    acc.add_(x.sin())
    return acc.sum()


def with_cpu_scalar(x, s):
    return x * s.to(x.device) + 1


def main():
    x = torch.randn(64, 64, device="cuda")
    w = torch.randn(64, 64, device="cuda")
    acc = torch.zeros(64, 64, device="cuda")
    s = torch.tensor(2.0)
    fns = [torch.compile(f, mode="reduce-overhead") for f in (residual, accumulate, with_cpu_scalar)]
    for _ in range(4):
        fns[0](x, w)
        fns[1](acc, x)
        fns[2](x, s)
    torch.cuda.synchronize()
    print("done")


if __name__ == "__main__":
    main()
