"""An Inductor C++ compile error that falls back to eager."""

import torch


def f(x):
    return torch.relu(x) + 1


def main():
    # A testing knob makes Inductor emit invalid C++ for relu, so g++ fails;
    # suppress_errors makes Dynamo log the failure and run the frame eagerly.
    with torch._dynamo.config.patch(suppress_errors=True), torch._inductor.config.patch(
        {"cpp.inject_relu_bug_TESTING_ONLY": "compile_error"}
    ):
        cf = torch.compile(f)
        x = torch.randn(8)
        torch.testing.assert_close(cf(x), f(x))  # compile fails, eager result


if __name__ == "__main__":
    main()
