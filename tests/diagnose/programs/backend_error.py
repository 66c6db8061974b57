"""A backend compile error: Dynamo's test backend raises on any graph with a relu."""
import torch


def f(x):
    return torch.relu(x + 1)


print(torch.compile(f, backend="relu_compile_error_TESTING_ONLY")(torch.randn(4)))
