"""Automatic dynamic shapes: symbols created, guards added, a specialization, mark_dynamic."""

import torch


def f(x):
    if x.shape[0] == 5:  # shape-dependent branch: a guard, then a specialization
        return x - 1
    return x * 2 + x.shape[0]


def g(x):
    return (x + 1).reshape(-1, 2).sum(1)


def main():
    cf = torch.compile(f, backend="aot_eager")
    for n in (2, 3, 4, 5):  # 2: static; 3: recompile with a dynamic dim; 4: reused; 5: guard fails
        x = torch.ones(n, 3)
        torch.testing.assert_close(cf(x), f(x))

    cg = torch.compile(g, backend="aot_eager")
    for n in (6, 10):  # dynamic from the first call
        x = torch.ones(n)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(cg(x), g(x))


if __name__ == "__main__":
    main()
