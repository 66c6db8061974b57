"""A torch module compiled with a backend of the user's that raises.

The compiled frame is torch's own code (nn.Linear's forward in torch/nn/modules/linear.py); the failure's traceback
runs from torch's frames into the user's `my_backend`, which raised. suppress_errors: the module runs eagerly.
The frame is not torch's wrapper of a user function (as a compiled nonstrict_trace function is): it is named
`forward`, not after the backend that failed it.
"""
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = True


def my_backend(gm, example_inputs):
    raise RuntimeError("my backend cannot do this")


lin = torch.nn.Linear(4, 4)
compiled = torch.compile(lin, backend=my_backend)
compiled(torch.randn(2, 4))
