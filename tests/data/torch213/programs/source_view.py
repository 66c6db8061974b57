"""Scenario: one function with every kind of line the annotated source view shows.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/source_view.py

- `scale` calls a nested function `inner` that Dynamo inlines: its nodes carry `inner`'s line;
- a data-dependent branch (`if y.sum() > 0`), a `print` and a `.item()`: three graph breaks,
  each followed by a resume function;
- `f` is called with a keyword argument.
"""
import torch


def scale(t, k):
    def inner(u):  # nested, inlined into the graph
        return u * k + 1

    return inner(t).sin()


def f(x, n=2):
    y = scale(x, n)
    if y.sum() > 0:  # data-dependent branch
        y = y.cos()
    print("between graphs")  # print
    m = y.max().item()  # .item()
    return y * m


def main():
    cf = torch.compile(f, backend="eager")
    x = torch.arange(4.0)
    torch.testing.assert_close(cf(x, n=3), f(x, n=3))


if __name__ == "__main__":
    main()
