"""Scenario: a backend error in the code after a graph break; the program exits non-zero.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/resume_backend_error.py
Exits with status 1 (uncaught BackendCompilerFailed).

`f` breaks the graph at line 17 (torch._dynamo.graph_break()); its first graph (`x + 1`)
compiles as [0/0]. The rest of `f`, the resume function torch_dynamo_resume_in_f_at_17,
holds torch.relu, which the test backend "relu_compile_error_TESTING_ONLY" refuses
(ReluCompileError, wrapped in BackendCompilerFailed): compile [1/0] fails and the
program dies. Its log names no failing line, only the frame being compiled.
"""
import torch


def f(x):
    y = x + 1
    torch._dynamo.graph_break()
    return torch.relu(y)


def main():
    torch.compile(f, backend="relu_compile_error_TESTING_ONLY")(torch.ones(3))


if __name__ == "__main__":
    main()
