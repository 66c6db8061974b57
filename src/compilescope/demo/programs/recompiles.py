"""Recompiles from shape, dtype and requires_grad changes, up to the recompile limit."""

import torch


def g(x):
    return x * 2 + 1


def h(x, n):
    return x + n


def main():
    with torch._dynamo.config.patch(recompile_limit=4):
        cg = torch.compile(g, backend="eager")
        cg(torch.ones(4))  # compile [0/0]
        cg(torch.ones(8))  # shape change: recompile, dim 0 becomes dynamic
        cg(torch.ones(8, dtype=torch.float64))  # dtype change: recompile
        cg(torch.ones(8, dtype=torch.float64, requires_grad=True))  # requires_grad change: recompile

        # dynamic=False: every new int n is specialized, until the recompile limit (4) is hit.
        ch = torch.compile(h, backend="eager", dynamic=False)
        x = torch.ones(3)
        for n in range(1, 7):
            torch.testing.assert_close(ch(x, n), x + n)


if __name__ == "__main__":
    main()
