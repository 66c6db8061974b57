"""Three distinct graph breaks: a data-dependent branch, print(), and .item()."""

import torch


def log_step(msg):
    print(msg)


def f(x):
    y = x * 2
    if y.sum() > 0:  # graph break 1: data-dependent branch on a tensor
        y = y + 1
    else:
        y = y - 1
    log_step("after branch")  # graph break 2: print()
    s = y.sum().item()  # graph break 3: Tensor.item()
    z = y * s
    log_step("after item")  # graph break 2 again (same reason, another frame)
    return z.relu()


def main():
    cf = torch.compile(f, backend="eager")
    x = torch.ones(4)
    torch.testing.assert_close(cf(x), f(x))
    torch.testing.assert_close(cf(x), f(x))  # same input: reuses the compiled code


if __name__ == "__main__":
    main()
