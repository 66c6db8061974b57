"""Wrong results the program notices itself: Inductor's CPU relu is broken on purpose, and the program compares the
compiled result with eager (torch.testing.assert_close), so the run fails while no compile does."""
import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


def f(x):
    return torch.relu(x + 1)


x = torch.randn(4)
torch.testing.assert_close(torch.compile(f)(x), f(x))
