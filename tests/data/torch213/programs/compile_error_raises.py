"""Scenario: compile failures that raise to the user; the program exits non-zero.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/compile_error_raises.py
Exits with status 1 (uncaught BackendCompilerFailed).

1. `fullgraph=True` function containing a graph break (`print`): dynamo raises
   `Unsupported`; the program catches it and continues (compile 0/0 fails).
2. A function compiled with the test backend "relu_compile_error_TESTING_ONLY"
   (from torch._dynamo.backends.debugging), which raises ReluCompileError for
   any graph containing torch.relu; dynamo wraps it in BackendCompilerFailed
   and, with default suppress_errors=False, it propagates: the program dies.
"""
import torch


def f_fullgraph(x):
    x = x + 1
    print("graph break under fullgraph=True")
    return x * 2


def g_relu(x):
    return torch.relu(x) * 3


def main():
    x = torch.ones(4)
    try:
        torch.compile(f_fullgraph, backend="eager", fullgraph=True)(x)
    except Exception as e:  # torch._dynamo.exc.Unsupported
        print(f"caught {type(e).__name__}")

    # Uncaught: BackendCompilerFailed -> non-zero exit status.
    torch.compile(g_relu, backend="relu_compile_error_TESTING_ONLY")(x)
    print("not reached")


if __name__ == "__main__":
    main()
