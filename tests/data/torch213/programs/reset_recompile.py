"""A recompile after torch._dynamo.reset(): torch counts frames from 0 again, so the reason's "0/0:" names g's own
first compile, not f's (the log's first [0/0]).

`f` is compiled and called twice (backend aot_eager): [0/0], then [0/1] for a new size. torch._dynamo.reset()
drops that code and the frame counter; `g` is compiled as [0/0] again, and recompiles for a new size ("0/0: tensor
'x' size mismatch ...", then dynamic) and for a new Python int n ("0/1: n == 1").
"""
import torch


def f(x):
    return x.sin() + 1


def g(x, n):
    return x.cos() * n


def main():
    compiled_f = torch.compile(f, backend="aot_eager")
    compiled_f(torch.randn(4))
    compiled_f(torch.randn(8))
    torch._dynamo.reset()
    compiled_g = torch.compile(g, backend="aot_eager")
    compiled_g(torch.randn(4), 1)
    compiled_g(torch.randn(6), 1)
    compiled_g(torch.randn(6), 2)


if __name__ == "__main__":
    main()
