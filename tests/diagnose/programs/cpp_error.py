"""An Inductor C++ compile error: Inductor's CPU codegen writes broken C++ for relu."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


def f(x):
    return torch.relu(x + 1)


print(torch.compile(f)(torch.randn(4)))
