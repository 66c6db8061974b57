"""Scenario: three distinct graph breaks in one compiled function.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/graph_breaks.py

Breaks (default config: capture_scalar_outputs=False):
  1. data-dependent branch on a tensor  (`if y.sum() > 0`)
  2. a call to builtin `print(...)`
  3. `Tensor.item()`
The function is called twice with the same input; the second call reuses the
compiled code (guards pass), so the breaks are only traced once per frame.
The `print` helper `log_step` is called twice inside `f`, so the print break
reason repeats (same user line, different compile ids/frames).
"""
import torch


def log_step(msg):
    print(msg)


def f(x):
    y = x * 2
    if y.sum() > 0:  # graph break 1: data-dependent branch
        y = y + 1
    else:
        y = y - 1
    log_step("after branch")  # graph break 2: print
    s = y.sum().item()  # graph break 3: .item()
    z = y * s
    log_step("after item")  # graph break 2 again (same reason, same print line)
    return z.relu()


def main():
    cf = torch.compile(f, backend="eager")
    x = torch.ones(4)
    out1 = cf(x)
    out2 = cf(x)  # same inputs: reuses compiled code
    torch.testing.assert_close(out1, f(x))
    torch.testing.assert_close(out2, f(x))


if __name__ == "__main__":
    main()
