"""A user wraps their own NumPy kernels as torch.library custom ops and calls them in compiled code (inductor).

CUSTOM_OP_VARIANT unset ("as_written"), each step caught so the next one runs (as in a notebook):
  clip_scores: calls mylib::softclip, a custom op with no fake (meta) kernel: Dynamo cannot run it on fake tensors
  and the compile fails (TorchRuntimeError) at line 72.
  train_step: mylib::gelu_np has a fake kernel but no autograd formula: compiling the training step (proj's weights
  require grad) fails in AOTAutograd (BackendCompilerFailed) at line 77, before anything calls backward.
  featurize: calls bucketize, a plain Python function on x.numpy() with np.interp, which Dynamo cannot trace: a graph
  break at line 57, the function runs eagerly.
CUSTOM_OP_VARIANT=fixed: softclip gets register_fake (and runs under no_grad: it has no autograd formula either),
gelu_np register_autograd, and bucketize is wrapped as the custom op mylib::bucketize (with a fake kernel), so
featurize compiles whole with no break.
"""
import os

import numpy as np
import torch

FIXED = os.environ.get("CUSTOM_OP_VARIANT", "as_written") == "fixed"
torch.manual_seed(0)


@torch.library.custom_op("mylib::softclip", mutates_args=())
def softclip(x: torch.Tensor, limit: float) -> torch.Tensor:
    return torch.from_numpy(np.tanh(x.detach().numpy() / limit) * limit)


@torch.library.custom_op("mylib::gelu_np", mutates_args=())
def gelu_np(x: torch.Tensor) -> torch.Tensor:
    a = x.detach().numpy()
    return torch.from_numpy(0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a**3))))


@gelu_np.register_fake
def _(x):
    return torch.empty_like(x)


if FIXED:
    @softclip.register_fake
    def _(x, limit):
        return torch.empty_like(x)

    def gelu_np_backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = torch.tanh(0.7978845608 * (x + 0.044715 * x**3))
        dt = (1 - t**2) * 0.7978845608 * (1 + 3 * 0.044715 * x**2)
        return grad * (0.5 * (1 + t) + 0.5 * x * dt)

    def gelu_np_setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    gelu_np.register_autograd(gelu_np_backward, setup_context=gelu_np_setup_context)


def bucketize_eager(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.interp(x.detach().numpy(), [-1.0, 0.0, 1.0], [0.0, 0.5, 1.0]).astype(np.float32))


if FIXED:
    bucketize = torch.library.custom_op("mylib::bucketize", bucketize_eager, mutates_args=())
    bucketize.register_fake(lambda x: torch.empty_like(x))
else:
    bucketize = bucketize_eager


proj = torch.nn.Linear(16, 16)


@torch.compile
def clip_scores(x):
    return softclip(proj(x), 3.0) * 2


@torch.compile
def train_step(x):
    return gelu_np(proj(x)).pow(2).mean()


@torch.compile
def featurize(x):
    codes = bucketize(x.tanh())
    return codes * x


def clip_inference():
    # softclip has no autograd formula: proj's weights require grad, so compiling it with grad enabled fails in
    # AOTAutograd even though nothing calls backward; the fixed variant runs it as inference.
    with torch.set_grad_enabled(not FIXED):
        return clip_scores(torch.randn(4, 16))


for name, call in [
    ("clip_scores", clip_inference),
    ("train_step", lambda: train_step(torch.randn(4, 16)).backward()),
    ("featurize", lambda: featurize(torch.randn(4, 16))),
]:
    try:
        call()
        print(name, "ok", flush=True)
    except Exception as e:  # the user reads the error and moves on to the next step
        print(name, "failed:", type(e).__name__, str(e).splitlines()[0], flush=True)
