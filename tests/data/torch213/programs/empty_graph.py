"""Scenario: compilations whose graph is empty (no operation), next to ones that are not.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/empty_graph.py

`log_first` breaks the graph (print) before any tensor op and `break_first` calls
torch._dynamo.graph_break() first: Dynamo restarts, and the attempt that ends at
the break has compilation_metrics graph_op_count 0 (status "empty"); the resume
functions after each break have one op ("ok"). `passthrough` has no op and no
graph at all (graph_op_count null: "ok", as tlparse says).
"""
import torch


def log_first(x):
    print("start")
    return x * 2


def break_first(x):
    y = x
    torch._dynamo.graph_break()
    return y * 3


def passthrough(x):
    return x


def main():
    x = torch.ones(4)
    torch.testing.assert_close(torch.compile(log_first, backend="eager")(x), x * 2)
    torch.testing.assert_close(torch.compile(break_first, backend="eager")(x), x * 3)
    torch.compile(passthrough, backend="eager")(x)


if __name__ == "__main__":
    main()
