"""Scenario: inductor fails to compile (C++ compile error) and dynamo falls back to eager.

Run standalone:  TORCH_TRACE=/tmp/trace python programs/compile_error_fallback.py
Exits 0.

`torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"`
makes inductor's CPU codegen emit invalid C++ for relu, so g++ fails and the
backend raises (BackendCompilerFailed wrapping a CppCompileError).
`torch._dynamo.config.suppress_errors = True` makes dynamo log the failure and
run the frame eagerly instead of raising.
"""
import torch

torch._dynamo.config.suppress_errors = True
torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x):
    return torch.relu(x) + 1


def main():
    cf = torch.compile(f)
    x = torch.randn(8)
    out = cf(x)  # compile fails -> eager fallback
    torch.testing.assert_close(out, f(x))
    print("fallback ok")


if __name__ == "__main__":
    main()
